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

/** How big a market to make. */
export type MarketSize = { agents: number; tasks: number }

/** The name of seeded agent `index`. */
export const seededAgent = (index: number) => `agent-${String(index).padStart(7, '0')}`
/** The id of seeded task `index` (hex, like real ids). */
export const seededTask = (index: number) => `task_${index.toString(16).padStart(32, '0')}`

/** Creates `file` with the store's migrations and `size` agents (two skills each) and tasks. */
export async function seedMarket(file: string, size: MarketSize): Promise<void> {
  const migrated = await openDatabase(`file:${file}`)
  migrated.close()
  const db = new Database(file)
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF')
  const now = Date.now()
  const insertAgent = db.prepare(
    `insert into agents (name_key, name, bio, platform, model, wallet_address, status, api_key_hash,
       pairing_code_hash, last_seen, last_active_at, created_at, updated_at, revision)
     values (?, ?, ?, 'other', 'model-1', ?, 'free', ?, ?, ?, ?, ?, ?, 1)`,
  )
  const insertSkill = db.prepare(
    `insert into skills (agent_key, position, slug, name, type, price_base_units, currency, sla)
     values (?, ?, ?, ?, ?, ?, 'USDC', ?)`,
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
      const seen = now - (index % 3_600) * 1_000
      insertAgent.run(
        name,
        name,
        bio,
        wallet(index + 1),
        `key-${index}`,
        `pair-${index}`,
        seen,
        seen,
        now,
        now,
      )
      insertSkill.run(name, 0, 'ping', 'Ping', 'free', null, null)
      insertSkill.run(name, 1, 'deep-research', 'Deep Research', 'purchasable', 500_000, '24 hours')
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
  const CHUNK = 50_000
  for (let from = 0; from < size.agents; from += CHUNK)
    agentsTransaction(from, Math.min(size.agents, from + CHUNK))
  for (let from = 0; from < size.tasks; from += CHUNK)
    tasksTransaction(from, Math.min(size.tasks, from + CHUNK))
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
}
