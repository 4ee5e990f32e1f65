/**
 * The floor of each measured path: the least work its requirement needs (the rows its answer carries, the key check
 * of a route that takes a bearer key, the same writes, one transaction and one sync per group of writes) done with
 * statements prepared once on a driver, and nothing else. bench/floor.ts serves it behind bare Elysia routes (which
 * also make the answer's JSON); bench/http.ts also times it in-process.
 *
 * Why each write does what it does (SPEC.md and CONTRACT.md say what each write needs and answers):
 * - A keyed write (heartbeat, milestone, profile update) hashes the presented key with SHA-256 and checks it against
 *   the agent's stored hash inside the write's WHERE, as the market's heartbeat does: no read for it, and a key rotated
 *   by anyone before the write lands stops it. (A wrong key then costs a read to tell 401 from 403 and 404; the load
 *   sends the right one.)
 * - A profile update answers the whole agent record as written: its row by `update … returning *` and its skills read
 *   in the same transaction (no other write can land between them; nothing is read before the write, since the
 *   answer must be the record after it), and the newest 50 milestones from a memo keyed by the agent's milestone
 *   counts (context.ts `milestonesOf`: they move with every milestone and nothing else), so it reads no milestone. Its
 *   event row.
 * - A milestone answers itself (its id, fields, trust, time): nothing read; its row, the agent's counter (whose WHERE
 *   checks the key, so a wrong key writes nothing) and its event row.
 * - An order of a free skill answers the task: the agent (it must exist, its name as registered) and that skill (its
 *   type, price and SLA) read; no memo helps, since every order moves the change counter a memo is kept by. The task
 *   row and its event row.
 */
import { Database as BunDatabase } from 'bun:sqlite'
import Libsql from 'libsql'
import { base64Url } from '../../packages/core/src/ports/Hashes.ts'
import { CHANGE_WINDOW_MS } from '../../packages/store-libsql/src/changeVersion.ts'
import { SEARCH_BATCH } from '../../packages/store-libsql/src/searchIndex.ts'

/** A statement prepared once: bind values positional. */
type Prepared = {
  get(...args: unknown[]): unknown
  all(...args: unknown[]): unknown[]
  run(...args: unknown[]): unknown
}

/** The SQLite drivers a floor can run on. */
export type FloorDriver = 'bun' | 'libsql'

/** A database opened for the floor: statements prepared once, plain SQL run, closed at the end. */
type FloorDatabase = { prepare(sql: string): Prepared; exec(sql: string): void; close(): void }

/** Opens `file` with `driver`, WAL, full sync and temporary files in memory as the market runs. */
export function openFloor(file: string, driver: FloorDriver): FloorDatabase {
  if (driver === 'bun') {
    const db = new BunDatabase(file, { strict: true })
    db.run('PRAGMA busy_timeout = 5000')
    db.run('PRAGMA synchronous = FULL')
    db.run('PRAGMA temp_store = MEMORY')
    return {
      prepare: (sql) => db.prepare(sql) as unknown as Prepared,
      exec: (sql) => void db.run(sql),
      close: () => db.close(),
    }
  }
  const db = new Libsql(file)
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA synchronous = FULL')
  db.exec('PRAGMA temp_store = MEMORY')
  return {
    prepare(sql) {
      const statement = db.prepare(sql)
      return {
        get: (...args) => statement.get(args),
        all: (...args) => statement.all(args),
        run: (...args) => statement.run(args),
      }
    },
    exec: (sql) => void db.exec(sql),
    close: () => db.close(),
  }
}

/** `length` random hex digits: ids and key digests as the market makes them (random, so indexed at random pages). */
export function randomHex(length: number): string {
  let hex = ''
  while (hex.length < length) hex += crypto.randomUUID().replaceAll('-', '')
  return hex.slice(0, length)
}

/** The columns of a task row the buyer's answer reads. */
type TaskRow = {
  id: string
  agent_name: string
  status: string
  skill_name: string
  sla: string
  price_base_units: number
  pay_to: string | null
  params: string | null
  buyer: string | null
  result_url: string | null
  created_at: number
  paid_at: number | null
}

const utf8 = new TextEncoder()
/** base64url without padding of UTF-8 `text` (a challenge's request and opaque), as mppx writes them. */
const base64UrlOf = (text: string) => base64Url(utf8.encode(text))

/** The base of the links a task's answer gives (the market's BASE_URL). */
const FLOOR_BASE_URL = 'http://localhost:3000'

/**
 * The least a buyer's GET of a task must answer (SPEC "Task", CONTRACT "Tasks"): its id, status, skill, SLA, the
 * payment (amount in USDC, currency, chain, payee), the next steps with real paths, the result once completed, its
 * times and order (params, buyer); never the buyer's e-mail, which the row holds.
 */
function taskAnswer(row: TaskRow) {
  const self = `${FLOOR_BASE_URL}/api/agents/${encodeURIComponent(row.agent_name)}/tasks/${row.id}`
  const unpaid = row.status === 'pending_payment'
  return {
    task_id: row.id,
    status: row.status,
    skill: row.skill_name,
    sla: row.sla,
    params: row.params === null ? null : JSON.parse(row.params),
    buyer: row.buyer,
    payment: { amount: row.price_base_units / 1e6, currency: 'USDC', chain: 'base', to: row.pay_to },
    next_steps: {
      pay: unpaid ? `Send ${row.price_base_units / 1e6} USDC to ${row.pay_to}.` : 'Nothing to pay.',
      verify: unpaid ? `POST ${self}/verify-payment` : 'Nothing to verify.',
      verify_body: unpaid ? '{"tx_hash":"0x…"}' : '{}',
      check_status: `GET ${self}`,
    },
    ...(row.status === 'completed' && { result_url: row.result_url }),
    created_at: new Date(row.created_at).toISOString(),
    paid_at: row.paid_at === null ? null : new Date(row.paid_at).toISOString(),
  }
}

/** The reads and writes of each path, on statements prepared once. Writes run inside the caller's transaction. */
export function floorWork(db: FloorDatabase) {
  const agent = db.prepare('select * from agents where name_key = ?')
  // No join and no ORDER BY that SQLite would sort in a temporary tree: a few rows sort faster here (bench/CHANGES.md).
  const skills = db.prepare('select * from skills where agent_key = ?')
  const milestones = db.prepare(
    'select * from milestones where agent_key = ? order by date desc, seq desc limit ? offset ?',
  )
  const task = db.prepare(
    `select tasks.*, (select name from agents where name_key = tasks.agent_key) as agent_name from tasks
     where tasks.id = ? and tasks.agent_key = ?`,
  )
  // The index holds lower-cased texts (store-libsql migration 0018): it answers the count alone.
  const matches = 'select rowid from agent_search where agent_search match lower(?)'
  const searchCount = db.prepare(
    'select count(*) as total from agent_search where agent_search match lower(?)',
  )
  const searchPage = db.prepare(
    `select * from agents where rowid in (${matches}) order by last_active_at desc, name_key limit 20`,
  )
  const user = db.prepare('select * from users where name_key = ?')
  const owned = db.prepare('select * from agents where owner_key = ?')
  const beat = db.prepare(
    `update agents set last_seen = max(coalesce(last_seen, 0), ?), last_active_at = max(last_active_at, ?)
     where name_key = ? and api_key_hash = ?`,
  )
  const insertAgent = db.prepare(
    `insert into agents (name_key, name, bio, platform, status, api_key_hash, pairing_code_hash, last_active_at,
       created_at, updated_at, revision, skill_text, sells_free)
     values (?, ?, 'load', 'other', 'free', ?, ?, ?, ?, ?, 1, 'Ping\u001fping\u001f', 1)`,
  )
  const insertSkill = db.prepare(
    `insert into skills (agent_key, position, slug, name, name_key, type, currency)
     values (?, 0, 'ping', 'Ping', 'ping', 'free', 'USDC')`,
  )
  const insertEvent = db.prepare('insert into events (kind, agent, at, summary, data) values (?, ?, ?, ?, ?)')
  const insertMilestone = db.prepare(
    `insert into milestones (id, agent_key, date, title, trust, created_at)
     values (?, ?, ?, ?, 'claimed', ?)`,
  )
  const countMilestone = db.prepare(
    `update agents set claimed_milestones = claimed_milestones + 1, last_active_at = max(last_active_at, ?)
     where name_key = ? and api_key_hash = ?`,
  )
  const insertTask = db.prepare(
    `insert into tasks (id, agent_key, skill_name, skill_slug, sla, status, price_base_units, params, buyer,
       client_key, created_at)
     values (?, ?, ?, ?, ?, 'paid', ?, ?, 'buyer', 'bench', ?)`,
  )
  const skill = db.prepare('select * from skills where agent_key = ? and slug = ?')
  // The seller of a challenge is kept as the market keeps it (orderWithPayment.ts): until the database's change
  // counter moves, that counter read at most once in CHANGE_WINDOW_MS (changeVersion.ts), so other processes' writes show.
  const changeCounter = db.prepare('select version from change_version where id = 1')
  let counter = { at: Number.NEGATIVE_INFINITY, version: -1 }
  const changeVersion = () => {
    const at = performance.now()
    if (at - counter.at > CHANGE_WINDOW_MS)
      counter = { at, version: (changeCounter.get() as { version: number }).version }
    return counter.version
  }
  // The challenge's request (price, currency, payee) is the same for every order of a skill: written with the seller.
  type Seller = { wallet: string | null; price: number; request: string } | null
  const sellers = new Map<string, { version: number; seller: Seller }>()
  const sellerOf = (name: string, slug: string): Seller => {
    const version = changeVersion()
    const key = `${name}\u0000${slug}`
    const kept = sellers.get(key)
    if (kept?.version === version) return kept.seller
    const agentRow = agent.get(name) as { wallet_address: string | null } | null
    const sold = skill.get(name, slug) as { price_base_units: number } | null
    const seller =
      agentRow && sold
        ? {
            wallet: agentRow.wallet_address,
            price: sold.price_base_units,
            request: base64UrlOf(
              JSON.stringify({
                amount: String(sold.price_base_units),
                currency: '0x20c000000000000000000000b9537d11c60e8b50',
                recipient: agentRow.wallet_address,
              }),
            ),
          }
        : null
    sellers.set(key, { version, seller })
    return seller
  }
  // The search index written ~1,000 agents at a time past its watermark, as the store does (searchIndex.ts).
  const indexTail = db.prepare(
    `insert into agent_search (rowid, name, bio, skill_text)
     select rowid, lower(name), lower(coalesce(bio, '')), lower(skill_text) from agents
     where rowid > (select through from agent_search_indexed where id = 1) and listing <> 'deleted'`,
  )
  const moveWatermark = db.prepare(
    'update agent_search_indexed set through = (select coalesce(max(rowid), 0) from agents) where id = 1',
  )
  let unindexed = 0
  const updateBio = db.prepare(
    `update agents set bio = ?, revision = revision + 1, updated_at = max(updated_at, ?),
       last_active_at = max(last_active_at, ?) where name_key = ? and api_key_hash = ? returning *`,
  )
  type AgentRow = Row & { claimed_milestones: number; verified_milestones: number }
  // The newest milestones of each agent as last read, kept while its milestone counts stay (context.ts milestonesOf).
  const newest = new Map<string, { stamp: string; rows: unknown[] }>()
  const newestMilestones = (row: AgentRow) => {
    const stamp = `${row.claimed_milestones}:${row.verified_milestones}`
    const kept = newest.get(row.name_key)
    if (kept?.stamp === stamp) return kept.rows
    const rows = milestones.all(row.name_key, 50, 0)
    newest.set(row.name_key, { stamp, rows })
    return rows
  }
  type Row = { name_key: string; position: number; last_active_at: number }
  const byPosition = (rows: Row[]) => rows.sort((a, b) => a.position - b.position)
  const byActivity = (rows: Row[]) =>
    rows.sort((a, b) => b.last_active_at - a.last_active_at || (a.name_key < b.name_key ? -1 : 1))
  const withSkills = (row: unknown) =>
    row ? { row, skills: byPosition(skills.all((row as Row).name_key) as Row[]) } : null
  const event = (kind: string, name: string, at: number) => insertEvent.run(kind, name, at, kind, '{}')
  const changes = (result: unknown) => (result as { changes: number }).changes
  return {
    /** The agent, its skills and its 50 newest milestones (the card and the agent record). */
    agent: (name: string) => ({ ...withSkills(agent.get(name)), milestones: milestones.all(name, 50, 0) }),
    /** A search page: the count, 20 agents and their skills. */
    search: (q: string) => ({
      total: searchCount.get(q),
      agents: searchPage.all(q).map(withSkills),
    }),
    /** A task with its agent's name, as the buyer's answer (SPEC "Task"; CONTRACT row 10: all of it but the e-mail). */
    task: (name: string, id: string) => {
      const row = task.get(id, name) as TaskRow | null
      return row && taskAnswer(row)
    },
    /** A page of 100 milestones and the agent's counters. */
    milestones: (name: string) => ({ agent: agent.get(name), milestones: milestones.all(name, 100, 0) }),
    /** A user and the agents it owns, with their skills. */
    user: (name: string) => ({
      user: user.get(name),
      agents: byActivity(owned.all(name) as Row[]).map(withSkills),
    }),
    /** A heartbeat's write, if `keyHash` is still the agent's key (false: not written). */
    heartbeat: (name: string, keyHash: string, at: number) => changes(beat.run(at, at, name, keyHash)) > 0,
    /**
     * A registration: a random API key and pairing code, the key's SHA-256 and the code's HMAC-SHA256 (what is kept
     * of them), the agent, its skill and its event; every 1,000th indexes the 1,000 for search. The answer shows both once.
     */
    register(name: string, at: number, pairingSecret = 'the floor pairing secret, 32 bytes') {
      const apiKey = `amk_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`
      // Eight letters of an alphabet of 31 without modulo bias: bytes past its last whole cycle (248) are drawn again.
      const alphabet = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789'
      let code = ''
      while (code.length < 8)
        for (const byte of crypto.getRandomValues(new Uint8Array(16)))
          if (byte < 248 && code.length < 8) code += alphabet[byte % 31]
      const pairingCode = `AGM-${code.slice(0, 4)}-${code.slice(4)}`
      const keyHash = Bun.SHA256.hash(apiKey, 'hex') as string
      const codeHash = `h1:${new Bun.CryptoHasher('sha256', pairingSecret).update(pairingCode).digest('hex')}`
      insertAgent.run(name, name, keyHash, codeHash, at, at, at)
      insertSkill.run(name)
      event('agent.registered', name, at)
      if (++unindexed >= SEARCH_BATCH) {
        unindexed = 0
        indexTail.run()
        moveWatermark.run()
      }
      const expires = new Date(at + 7 * 24 * 60 * 60 * 1000).toISOString()
      return { agentId: name, apiKey, pairingCode, pairingCodeExpiresAt: expires, status: 'free' }
    },
    /** A milestone if `keyHash` is the agent's key: the agent's counter (checking the key), its row and its event. */
    milestone(
      name: string,
      keyHash: string,
      fields: { id: string; date: string; title: string; at: number },
    ) {
      if (changes(countMilestone.run(fields.at, name, keyHash)) === 0) return null
      insertMilestone.run(fields.id, name, fields.date, fields.title, fields.at)
      event('milestone.recorded', name, fields.at)
      return { ...fields, trust: 'claimed' }
    },
    /** What an order of `slug` needs read: the agent and that skill (null: no such agent or skill). */
    seller(name: string, slug: string) {
      const agentRow = agent.get(name) as { name: string } | null
      const sold = agentRow && (skill.get(name, slug) as Record<string, unknown> | null)
      return sold ? { agent: agentRow, skill: sold } : null
    },
    /** An order of a free skill read by `seller`: the task and its event; the task's row. */
    order(name: string, sold: Record<string, unknown>, id: string, params: string, at: number) {
      const { name: skillName, slug } = sold
      // A skill that states no SLA is ordered as best effort, a free one at no price (newTask.ts).
      const sla = sold.sla ?? 'best effort'
      const price = sold.price_base_units ?? 0
      insertTask.run(id, name, skillName, slug, sla, price, params, at)
      event('task.created', name, at)
      return { id, agent: name, skill: slug, sla, status: 'paid', price, params, createdAt: at }
    },
    /**
     * A 402 challenge as the market makes one per request from its template (MppChallenges.ts): the seller and its
     * skill (kept until the change counter moves, as the market keeps them), the order's body checked (an object
     * whose params, when given, are an object), its SHA-256 digest, an expiry, the opaque binding the agent, skill,
     * digest and a random nonce (base64url JSON), the HMAC-SHA256 id over the binding, the header (with the payment's request) and
     * problem. Null when there is no such seller; the string "invalid" for a body that is no order.
     */
    challenge(name: string, slug: string, body: unknown, secret: string) {
      const order = body as { params?: unknown } | null
      if (typeof order !== 'object' || order === null || Array.isArray(order)) return 'invalid'
      if (order.params !== undefined && (typeof order.params !== 'object' || order.params === null))
        return 'invalid'
      const seller = sellerOf(name, slug)
      if (!seller) return null
      const digest = new Bun.CryptoHasher('sha256').update(JSON.stringify(body)).digest('hex')
      const expires = new Date(Date.now() + 300_000).toISOString()
      // Each challenge its own: 16 random bytes, so two for one order in one millisecond differ (attack54.test.ts).
      const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64url')
      const opaque = base64UrlOf(
        `{"_mppx_scope":${JSON.stringify(`${name}/${slug}`)},"bodyDigest":"${digest}","nonce":"${nonce}"}`,
      )
      const binding = `127.0.0.1|tempo|charge|${seller.request}|${expires}||${opaque}`
      const id = new Bun.CryptoHasher('sha256', secret).update(binding).digest('base64url')
      return {
        header: `Payment id="${id}", realm="127.0.0.1", method="tempo", intent="charge", request="${seller.request}", expires="${expires}", opaque="${opaque}"`,
        problem: {
          type: 'https://paymentauth.org/problems/payment-required',
          title: 'Payment Required',
          status: 402,
          challengeId: id,
        },
      }
    },
    /**
     * A profile update if `keyHash` is the agent's key (checked in the update's WHERE): the row as written, its skills
     * and newest milestones, and its event; null when nothing was written.
     */
    updateBio(name: string, keyHash: string, bio: string, at: number) {
      const row = updateBio.get(bio, at, at, name, keyHash) as AgentRow | null
      if (!row) return null
      event('agent.updated', name, at)
      return { ...row, skills: byPosition(skills.all(name) as Row[]), milestones: newestMilestones(row) }
    },
  }
}

/** The SHA-256 digest of a presented key, hex, as the market stores it. */
export const keyDigest = (key: string) => new Bun.CryptoHasher('sha256').update(key).digest('hex')

/** The writes of one turn of the event loop in one transaction and one sync, as the market's group commit does. */
export function floorGroupCommit(db: FloorDatabase) {
  type Queued = { write: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void }
  let queue: Queued[] = []
  const flush = () => {
    const batch = queue
    queue = []
    const results: unknown[] = []
    let began = false
    try {
      db.exec('BEGIN IMMEDIATE')
      began = true
      for (const { write } of batch) results.push(write())
      db.exec('COMMIT')
    } catch (error) {
      // A failed batch fails its requests (never leaves them waiting) and lands nothing.
      if (began) db.exec('ROLLBACK')
      for (const { reject } of batch) reject(error)
      return
    }
    for (const [index, { resolve }] of batch.entries()) resolve(results[index])
  }
  return <T>(write: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ write, resolve: resolve as (value: unknown) => void, reject })
    })
}
