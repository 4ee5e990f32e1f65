import { describe, expect, test } from 'bun:test'
import { MARKET_ROUTES } from '@agentmarket/core'
import { DEFAULT_RATE_POLICIES, type RouteRow } from '@agentmarket/core/routes'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedBudget } from '../testing/budgets.ts'
import { PAYER, payment, SELLER, scriptedChain, TX_HASH } from '../testing/chain.ts'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

// Walks the route table: every write (each non-GET row) must honour Idempotency-Key through the real HTTP path, so a
// row added tomorrow fails here until it has a request below that succeeds, and its retry is shown to replay.

type App = Awaited<ReturnType<typeof testApp>>
/** One request of a row: what a client sends (the body as its exact text, so a wallet proof can sign it). */
type Sent = {
  method: string
  path: string
  body?: string
  headers?: Record<string, string>
  /** Another body the row takes (default `{"other": true}`). */
  other?: string
}

const owner = privateKeyToAccount(generatePrivateKey())
const PUBLIC_HOOK = 'https://93.184.216.34/hook'
const DAY = 24 * 3600 * 1000

/** A market with a seller (`walker`, free skill `ping` reviewed for an hour) and the agents the fixtures spend. */
async function market() {
  const { chain, script } = scriptedChain()
  // A payment mined in block 100 under a head at 200: final.
  script.receipts = [[payment(100n)]]
  script.heads = [200n]
  const app = await testApp(undefined, { chain })
  const walker = await app.register('walker', { skills: ['Ping', { name: 'Essay', review_seconds: 3600 }] })
  const agents = { walker: walker.key } as Record<string, string>
  for (const name of ['leaver', 'buyer', 'pairee']) {
    const agent = await app.register(name)
    agents[name] = agent.key
    if (name === 'buyer') expect((await app.pair('owner', agent.pairingCode, owner)).status).toBe(200)
    if (name === 'pairee') agents.paireeCode = agent.pairingCode
  }
  return { app, agents, script }
}

const json = (method: string, path: string, body: unknown, key?: string): Sent => ({
  method,
  path,
  body: JSON.stringify(body),
  headers: key ? { authorization: `Bearer ${key}` } : {},
})

/** A free order of walker's ping: its task id. */
async function order(app: App) {
  const answer = await app.call('POST', '/api/agents/walker/tasks', { body: { skill: 'ping' } })
  return answer.json.task_id as string
}

/** A 1.5 USDC order of `report` from `paid-seller` (SELLER's wallet): verify-payment's request for PAYER's payment. */
async function paidOrderCheck(app: App): Promise<Sent & { sellerKey: string }> {
  const { key } = await app.register('paid-seller', {
    skills: [{ name: 'Report', type: 'purchasable', price: 1.5 }],
  })
  await app.call('PUT', '/api/agents/paid-seller', { key, body: { walletAddress: SELLER } })
  const created = await app.call('POST', '/api/agents/paid-seller/tasks', { body: { skill: 'report' } })
  const proof = created.json.payment.payer_proof
  const signature = await PAYER.signTypedData({ ...proof, message: { ...proof.message, txHash: TX_HASH } })
  return {
    ...json('POST', `/api/agents/paid-seller/tasks/${created.json.task_id}/verify-payment`, {
      tx_hash: TX_HASH,
      payer_signature: signature,
    }),
    sellerKey: key,
  }
}

/** A delivery of walker's `essay` (an hour's review) ordered by PAYER's wallet: the buyer's signed `decision`. */
async function reviewOf(app: App, walkerKey: string, decision: 'accept' | 'reject'): Promise<Sent> {
  const ordered = await app.call('POST', '/api/agents/walker/tasks', {
    body: { skill: 'essay', buyer_wallet: PAYER.address },
  })
  const path = `/api/agents/walker/tasks/${ordered.json.task_id}`
  const delivered = await app.call('POST', `${path}/complete`, {
    key: walkerKey,
    body: { result_url: 'https://example.com/essay' },
  })
  const message = { ...delivered.json.review.message, decision, reason: 'because' }
  const signature = await PAYER.signTypedData({ ...delivered.json.review, message })
  return json('POST', `${path}/${decision}`, { reason: 'because', signature })
}

/** A paid, completed task of paid-seller: PAYER's signed rating of it. */
async function ratingOf(app: App): Promise<Sent> {
  const check = await paidOrderCheck(app)
  expect((await app.call('POST', check.path, { body: check.body })).status).toBe(200)
  const path = check.path.replace(/\/verify-payment$/, '')
  const done = await app.call('POST', `${path}/complete`, {
    key: check.sellerKey,
    body: { result_url: 'https://example.com/r' },
  })
  const message = { ...done.json.rate.message, score: 5, comment: 'fast' }
  const signature = await PAYER.signTypedData({ ...done.json.rate, message })
  return json('POST', `${path}/rating`, { score: 5, comment: 'fast', signature })
}

/** For each write, a request that succeeds once the fixture has run (each runs on a fresh market). */
const FIXTURES: Record<string, (app: App, agents: Record<string, string>) => Promise<Sent>> = {
  registerAgent: async () => json('POST', '/api/agents/register', { name: 'newcomer' }),
  updateAgent: async (_, a) => json('PUT', '/api/agents/walker', { bio: 'retried' }, a.walker),
  heartbeat: async (_, a) => json('POST', '/api/agents/walker/heartbeat', {}, a.walker),
  issuePairingCode: async (_, a) => json('POST', '/api/agents/walker/pairing-code', {}, a.walker),
  // By the owner's wallet proof: a rotation by the agent's key is replayed to no one, that key no longer working
  // (401 idempotency_credential_revoked: tests/security/keyRotation.test.ts).
  rotateApiKey: async (app) => {
    const path = '/api/agents/buyer/keys/rotate'
    const body = '{}'
    return { method: 'POST', path, body, headers: await app.signedProof(owner, 'POST', path, body) }
  },
  recordMilestone: async (_, a) =>
    json('POST', '/api/agents/walker/milestones', { date: '2026-05-01', title: 'Shipped' }, a.walker),
  verifyPayment: async (app) => paidOrderCheck(app),
  acceptDelivery: async (app, a) => reviewOf(app, a.walker as string, 'accept'),
  rejectDelivery: async (app, a) => reviewOf(app, a.walker as string, 'reject'),
  rateTask: async (app) => ratingOf(app),
  createTask: async () => ({
    ...json('POST', '/api/agents/walker/tasks', { skill: 'ping' }),
    other: JSON.stringify({ skill: 'ping', params: { other: true } }),
  }),
  completeTask: async (app, a) =>
    json(
      'POST',
      `/api/agents/walker/tasks/${await order(app)}/complete`,
      { result_url: 'https://example.com/result' },
      a.walker,
    ),
  withdrawListing: async (_, a) => json('DELETE', '/api/agents/leaver/listing', {}, a.leaver),
  setBudget: async (app) => {
    const now = app.clock.now().getTime()
    const fields = {
      agent: 'buyer',
      perTaskMax: 5,
      perDayMax: 10,
      expiresAt: new Date(now + 30 * DAY),
      issuedAt: new Date(now - 1000),
    }
    return json('PUT', '/api/agents/buyer/budget', await signedBudget(owner, fields, TEST_BASE_URL))
  },
  addWebhook: async (_, a) => json('POST', '/api/agents/walker/webhooks', { url: PUBLIC_HOOK }, a.walker),
  deleteWebhook: async (app, a) => {
    const added = await app.call('POST', '/api/agents/walker/webhooks', {
      key: a.walker,
      body: { url: PUBLIC_HOOK },
    })
    return json('DELETE', `/api/agents/walker/webhooks/${added.json.id}`, {}, a.walker)
  },
  addTaskWebhook: async (app) =>
    json('POST', `/api/agents/walker/tasks/${await order(app)}/webhooks`, { url: PUBLIC_HOOK }),
  deleteTaskWebhook: async (app) => {
    const task = await order(app)
    const added = await app.call('POST', `/api/agents/walker/tasks/${task}/webhooks`, {
      body: { url: PUBLIC_HOOK },
    })
    return json('DELETE', `/api/agents/walker/tasks/${task}/webhooks/${added.json.id}`, {}, added.json.secret)
  },
  pairAgent: async (app, a) => {
    const path = '/api/community/users/owner/pair-agent'
    const body = JSON.stringify({ pairingCode: a.paireeCode })
    const proof = await app.signedProof(owner, 'POST', path, body)
    return { method: 'POST', path, body, headers: { 'x-wallet-address': owner.address, ...proof } }
  },
  updateUser: async (app) => {
    const path = '/api/community/users/owner'
    const body = JSON.stringify({ bio: 'retried' })
    return { method: 'PUT', path, body, headers: await app.signedProof(owner, 'PUT', path, body) }
  },
}

/**
 * Writes whose success needs a refund transaction on a chain (from the seller's wallet back to the payer); the walk still checks that each reads
 * the key (a malformed one is refused before anything runs), and the mechanism they share is the one replayed above.
 */
const WITHOUT_SUCCESS_FIXTURE = new Set(['recordRefund', 'rateTask', 'acceptDelivery', 'rejectDelivery'])

const WRITES = MARKET_ROUTES.filter((row) => row.method !== 'GET' && row.idempotency !== 'credential')

const send = (app: App, sent: Sent, key: string, body = sent.body) =>
  app.call(sent.method, sent.path, {
    ...(body !== undefined && { body }),
    headers: { ...sent.headers, 'idempotency-key': key },
  })

/** Some request of `row` with its path parameters filled in. */
const someRequest = (row: RouteRow): Sent => ({
  method: row.method,
  path: `/api${row.path.replace(/\{\w+\}/g, 'walker')}`,
  body: '{}',
})

describe('secrets kept past the quota of kept answers', () => {
  test('attack: only rows whose secret is shown once and that create at most 10 an hour per client keep it past the quota', () => {
    const past = MARKET_ROUTES.filter((row) => row.secretPastQuota)
    expect(past.map((row) => row.id).sort()).toEqual(['registerAgent', 'rotateApiKey'])
    for (const row of past) {
      expect(row.shownOnce).toBe(true)
      // A registration spends register_attempt on every try and register on each one that creates an agent.
      const creates = row.rate === 'register_attempt' ? 'register' : row.rate
      expect(creates === undefined || creates === 'none').toBe(false)
      const policy = DEFAULT_RATE_POLICIES[creates as Exclude<typeof creates, 'none' | undefined>]
      expect((policy.limit * 3600) / policy.windowSeconds).toBeLessThanOrEqual(10)
    }
  })
})

describe('every write of the route table honours Idempotency-Key', () => {
  test('each write is either replayed by a fixture below or named as needing a chain', () => {
    const missing = WRITES.map((row) => row.id).filter(
      (id) => !FIXTURES[id] && !WITHOUT_SUCCESS_FIXTURE.has(id),
    )
    expect(missing).toEqual([])
  })

  test.each(WRITES.map((row) => [row.id, row] as const))(
    '%s refuses a malformed key before acting',
    async (_, row) => {
      const { app, agents } = await market()
      const sent = (await FIXTURES[row.id]?.(app, agents)) ?? someRequest(row)
      const refused = await send(app, sent, 'not a key')
      expectProblemShape(refused, 400, 'invalid_idempotency_key')
    },
  )

  test.each(WRITES.filter((row) => FIXTURES[row.id]).map((row) => [row.id, row] as const))(
    '%s: a retry with the same key and body gets the first answer; another body is 409',
    async (_, row) => {
      const { app, agents } = await market()
      const fixture = FIXTURES[row.id]
      if (!fixture) throw new Error(`no fixture for ${row.id}`)
      const sent = await fixture(app, agents)
      const first = await send(app, sent, 'retry-1')
      expect(first.status).toBeGreaterThanOrEqual(200)
      expect(first.status).toBeLessThan(300)
      expect(first.headers.get('idempotent-replayed')).toBeNull()
      const retry = await send(app, sent, 'retry-1')
      expect(retry.status).toBe(first.status)
      expect(retry.headers.get('idempotent-replayed')).toBe('true')
      expect(retry.json).toEqual(first.json)
      const other = await send(app, sent, 'retry-1', sent.other ?? JSON.stringify({ other: true }))
      expectProblemShape(other, 409, 'idempotency_key_reused')
    },
  )

  test('an answer that asks to retry later (verify-payment 202, not final) is not kept: the retry checks again', async () => {
    const { app, script } = await market()
    const sent = await paidOrderCheck(app)
    script.heads = [100n]
    const pending = await send(app, sent, 'check-1')
    expect(pending.status).toBe(202)
    script.heads = [200n]
    const verified = await send(app, sent, 'check-1')
    expect(verified.status).toBe(200)
    expect(verified.headers.get('idempotent-replayed')).toBeNull()
    expect(verified.json.verified).toBe(true)
    const retry = await send(app, sent, 'check-1')
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json).toEqual(verified.json)
  })
})
