/**
 * Fills a new database with a market of a given size, fast: the schema comes from the store's own migrations, the
 * rows are written with prepared statements in a few large transactions (libSQL's native binding, no HTTP), so
 * 100,000 agents and 1,000,000 tasks take seconds. Names and bios are deterministic; a fixed share of bios holds
 * each search word, so searches find the same share at every size.
 */
import { openDatabase } from '@agentmarket/store-libsql'
import Database from 'libsql'

/** Words bios are made of; `SEARCH_WORD` is in one bio of ten. */
const WORDS = ['research', 'summaries', 'translation', 'invoices', 'tests', 'schemas', 'audits', 'images']
/** A word one agent of ten has in its bio: the q of the search benchmarks. */
export const SEARCH_WORD = 'cartography'
/** A word in the name of a skill one agent of ten sells (other agents than the bio word's). */
export const SKILL_WORD = 'orthophoto'
/** How many owners the seeded agents have; one agent in 100 is owned, by `seededOwner(index % OWNERS)`. */
export const OWNERS = 50
/** The username of seeded owner `index`. */
export const seededOwner = (index: number) => `owner-${index}`

/** How big a market to make. */
export type MarketSize = { agents: number; tasks: number }

/** The name of seeded agent `index`. */
export const seededAgent = (index: number) => `agent-${String(index).padStart(7, '0')}`
/** The id of seeded task `index` (hex, like real ids). */
export const seededTask = (index: number) => `task_${index.toString(16).padStart(32, '0')}`

/** The skills of seeded agent `index` and the columns the store derives from them (its search text, price, free flag). */
function seededSkills(index: number) {
  // Ping is sold in one agent of four, Deep Research given away in one of five; prices run from 0.01 to 1 USDC.
  const skills = [
    { slug: 'ping', name: 'Ping', type: index % 4 === 0 ? 'purchasable' : 'free', price: 20_000 },
    {
      slug: 'deep-research',
      name: 'Deep Research',
      type: index % 5 === 0 ? 'free' : 'purchasable',
      price: 10_000 * (1 + (index % 100)),
    },
    ...(index % 10 === 7
      ? [{ slug: 'ortho', name: 'Orthophoto Mosaic', type: 'purchasable', price: 300_000 }]
      : []),
  ].map((skill) => ({ ...skill, price: skill.type === 'free' ? null : skill.price }))
  const prices = skills.flatMap((skill) => (skill.price === null ? [] : [skill.price]))
  return {
    skills,
    // As the store writes it (store-libsql agentList.ts): name, slug and description of each skill, U+001F between.
    skillText: skills.flatMap((skill) => [skill.name, skill.slug, '']).join('\u001f'),
    cheapest: prices.length ? Math.min(...prices) : null,
    sellsFree: skills.some((skill) => skill.price === null) ? 1 : 0,
  }
}

/** Creates `file` with the store's migrations and `size` agents (two or three skills each) and tasks. */
export async function seedMarket(file: string, size: MarketSize): Promise<void> {
  const migrated = await openDatabase(`file:${file}`)
  migrated.close()
  const db = new Database(file)
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF')
  const now = Date.now()
  const insertAgent = db.prepare(
    `insert into agents (name_key, name, bio, platform, model, wallet_address, status, api_key_hash,
       pairing_code_hash, last_seen, last_active_at, created_at, updated_at, revision, owner_username, owner_key,
       owner_proven, verified_milestones, trust_credit_base_units, paying_buyers, skill_text,
       cheapest_price_base_units, sells_free)
     values (?, ?, ?, 'other', 'model-1', ?, 'free', ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const insertSkill = db.prepare(
    `insert into skills (agent_key, position, slug, name, name_key, type, price_base_units, currency, sla)
     values (?, ?, ?, ?, lower(?), ?, ?, 'USDC', ?)`,
  )
  const insertTask = db.prepare(
    `insert into tasks (id, agent_key, skill_name, skill_slug, sla, status, price_base_units, pay_to, params,
       buyer, created_at, paid_at, completed_at, result_url)
     values (?, ?, 'Deep Research', 'deep-research', '24 hours', 'completed', 500000, ?, '{"q":"x"}', 'buyer', ?, ?, ?, ?)`,
  )
  const wallet = (index: number) => `0x${index.toString(16).padStart(40, '0')}`
  const agentsTransaction = db.transaction((from: number, to: number) => {
    for (let index = from; index < to; index++) {
      const name = seededAgent(index)
      const words = `${WORDS[index % WORDS.length]} and ${WORDS[(index * 7) % WORDS.length]}`
      const bio = `Agent ${index} does ${words}${index % 10 === 3 ? ` with ${SEARCH_WORD}` : ''}.`
      // Heartbeats spread over the last hour: about 8% live, 42% idle, 50% off.
      const seen = now - (index % 3_600) * 1_000
      const owner = index % 100 === 0 ? seededOwner((index / 100) % OWNERS) : null
      // Trust varies: milestones, and for one agent in 50 a paid credit from up to 5 buyers.
      const credit = index % 50 === 0 ? (index % 7) * 3_000_000 : 0
      const { skills, skillText, cheapest, sellsFree } = seededSkills(index)
      insertAgent.run(
        name,
        name,
        bio,
        wallet(index + 1),
        `key-${index}`,
        `pair-${index}`,
        seen,
        seen,
        now - index * 1_000,
        now,
        owner,
        owner,
        owner ? 1 : 0,
        index % 6,
        credit,
        credit ? 1 + (index % 5) : 0,
        skillText,
        cheapest,
        sellsFree,
      )
      skills.forEach((skill, position) => {
        insertSkill.run(
          name,
          position,
          skill.slug,
          skill.name,
          skill.name,
          skill.type,
          skill.price,
          '24 hours',
        )
      })
    }
  })
  const tasksTransaction = db.transaction((from: number, to: number) => {
    for (let index = from; index < to; index++) {
      const agent = index % size.agents
      const at = now - index
      insertTask.run(
        seededTask(index),
        seededAgent(agent),
        wallet(agent + 1),
        at,
        at,
        at,
        'https://r.example/1',
      )
    }
  })
  // The owners as users (a profile each), so user reads have someone to read.
  const insertUser = db.prepare(
    `insert into users (name_key, username, wallet_address, bio, showcase, invite_code, created_at, updated_at)
     values (?, ?, ?, 'An owner of agents', '[]', ?, ?, ?)`,
  )
  db.transaction(() => {
    for (let index = 0; index < OWNERS; index++)
      insertUser.run(
        seededOwner(index),
        seededOwner(index),
        wallet(10_000_000 + index),
        `invite-${index}`,
        now,
        now,
      )
  })()
  const CHUNK = 50_000
  for (let from = 0; from < size.agents; from += CHUNK)
    agentsTransaction(from, Math.min(size.agents, from + CHUNK))
  for (let from = 0; from < size.tasks; from += CHUNK)
    tasksTransaction(from, Math.min(size.tasks, from + CHUNK))
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
}
