import { describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, manualClock, memoryStore, type Store } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { createApp } from '../packages/server/src/app.ts'

// An order of a skill named by its slug reads the skill and its seller together (Store.getSellerSkill, issue 41);
// every other order reads the agent and all its skills. Both must answer alike, byte for byte: each order below is
// sent to two markets made alike (the same clock and the same random bytes), one as shipped and one whose store never
// finds a seller's skill that way, so every order there goes through the agent and all its skills.

const BASE_URL = 'http://localhost:3000'
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const SKILLS = [
  'Echo',
  {
    name: 'Essay',
    type: 'free',
    description: 'an essay on a topic',
    sla: '10 minutes',
    sla_seconds: 600,
    review_seconds: 3600,
    reveal: 'after_acceptance',
    input: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
  },
  { name: 'Deep Research', type: 'free' },
  { name: 'Report', type: 'purchasable', price: 1.5 },
]

/** An order: the agent it is sent to, its body, and the headers beside it. */
type Order = { agent: string; body: unknown; headers?: Record<string, string> }

/** Every kind of order the free path answers, and its refusals. */
const ORDERS: Order[] = [
  { agent: 'seller', body: { skill: 'echo' } },
  { agent: 'SELLER', body: { skill: ' ECHO ', params: { q: 1 } } },
  {
    agent: 'seller',
    body: { skill: 'Echo', buyer: 'buyer', buyer_email: 'b@example.com', buyer_wallet: WALLET },
  },
  { agent: 'seller', body: { skill: 'echo', buyer: 'buyer' }, headers: { 'buyer-key': 'BUYER_KEY' } },
  { agent: 'seller', body: { skill: 'essay', params: { topic: 'bees' } } },
  { agent: 'seller', body: { skill: 'essay', params: {} } },
  { agent: 'seller', body: { skill: 'deep research' } },
  { agent: 'seller', body: { skill: 'deep-research' } },
  { agent: 'seller', body: { skill: 'report' } },
  { agent: 'seller', body: { skill: 'nothing' } },
  { agent: 'seller', body: { skill: 5 } },
  { agent: 'nobody', body: { skill: 'echo' } },
  { agent: 'quitter', body: { skill: 'echo' } },
  { agent: 'quitter', body: { skill: 'nothing' } },
  { agent: 'walletless', body: { skill: 'paid' } },
  { agent: 'seller', body: { skill: 'echo' }, headers: { 'idempotency-key': 'order-1' } },
  { agent: 'seller', body: { skill: 'echo' }, headers: { 'idempotency-key': 'order-1' } },
  {
    agent: 'seller',
    body: { skill: 'essay', params: { topic: 'x' } },
    headers: { 'idempotency-key': 'order-1' },
  },
]

/** A market on `store` whose clock and randomness are the same in every run. */
async function marketOn(store: Store) {
  let next = 0
  const random = { bytes: (length: number) => Uint8Array.from({ length }, () => (next++ * 151 + 7) % 256) }
  const clock = manualClock('2026-06-01T12:00:00.000Z')
  const market = Marketplace.create({ store, clock, random, config: defaultConfig(BASE_URL) })
  const app = createApp({ market, baseUrl: BASE_URL })
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init = {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }
    const answer = await app.handle(new Request(`${BASE_URL}${path}`, body === undefined ? { method } : init))
    clock.advance(1000)
    const shown = [...answer.headers].map(([name, value]) => `${name}: ${value}`).sort()
    return `${answer.status} ${shown.join('; ')}\n${await answer.text()}`
  }
  const register = async (name: string, extra: Record<string, unknown>) =>
    JSON.parse((await call('POST', '/api/agents/register', { name, ...extra })).split('\n')[1] ?? '{}')
      .apiKey as string
  const sellerKey = await register('seller', { skills: SKILLS, walletAddress: WALLET })
  const buyerKey = await register('buyer', {})
  const quitterKey = await register('quitter', { skills: ['Echo'] })
  await call('DELETE', '/api/agents/quitter/listing', undefined, { authorization: `Bearer ${quitterKey}` })
  await register('walletless', { skills: [{ name: 'Paid', type: 'purchasable', price: 2 }] })
  const answers: string[] = []
  for (const { agent, body, headers = {} } of ORDERS) {
    const sent = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name, value === 'BUYER_KEY' ? buyerKey : value]),
    )
    answers.push(await call('POST', `/api/agents/${agent}/tasks`, body, sent))
  }
  answers.push(
    await call('GET', '/api/agents/seller/tasks', undefined, { authorization: `Bearer ${sellerKey}` }),
  )
  answers.push(JSON.stringify(await store.listEvents({ limit: 200 })))
  return answers
}

/** `store` finding no seller's skill by its slug: every order reads the agent and all its skills. */
const throughTheAgent = (store: Store): Store => ({ ...store, getSellerSkill: async () => null })

const STORES: [string, () => Promise<Store>][] = [
  ['libSQL', async () => libsqlStore(await openDatabase(':memory:'))],
  ['memory', async () => memoryStore()],
]

describe('free orders answer alike whether the skill is read alone or with the whole agent', () => {
  for (const [label, open] of STORES)
    test(`behavior: every kind of order and refusal, its task list and its events are the same bytes (${label})`, async () => {
      const shipped = await marketOn(await open())
      const old = await marketOn(throughTheAgent(await open()))
      expect(shipped.length).toBe(ORDERS.length + 2)
      for (const [index, answer] of shipped.entries()) expect(answer, String(index)).toBe(old[index] ?? '')
      // The kinds are all there: created free and paid, a replay, and each refusal.
      const statuses = shipped.slice(0, ORDERS.length).map((answer) => answer.slice(0, 3))
      expect(new Set(statuses)).toEqual(new Set(['201', '400', '404', '409']))
      expect(shipped.join('\n')).toContain('"status":"pending_payment"')
      expect(shipped.join('\n')).toContain('idempotency_key_reused')
    })

  test('behavior: an order of a skill by its slug reads no agent record (libSQL)', async () => {
    const store = await STORES[0]?.[1]()
    if (!store) throw new Error('no store')
    let agentReads = 0
    const counted: Store = {
      ...store,
      getAgent: (name) => {
        agentReads++
        return store.getAgent(name)
      },
    }
    const market = Marketplace.create({ store: counted, config: defaultConfig(BASE_URL) })
    await market.registerAgent({ name: 'seller', skills: ['Echo'] })
    agentReads = 0
    expect((await market.createTask('seller', { skill: 'echo' })).status).toBe(201)
    expect(agentReads).toBe(0)
    expect((await market.createTask('seller', { skill: 'Echo ' })).status).toBe(201)
    expect(agentReads).toBe(0)
  })
})
