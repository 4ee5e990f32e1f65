import { afterAll, describe, expect, setSystemTime, test } from 'bun:test'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { type Client, createClient, custom } from 'viem'
import type { Store } from '../../packages/core/src/index.ts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { libsqlStore, openDatabase } from '../../packages/store-libsql/src/index.ts'
import { openPostgres, postgresStore } from '../../packages/store-postgres/src/index.ts'
import { startMigratedPostgres } from '../support/postgres.ts'
import { countedWrites } from '../support/storeWrites.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'

// A paid MPP order claims its order (scoped to its payer) and its transfer's replay marker in one store write, at
// the broadcast, once the credential is checked and its transfer simulated. The attacker's question: can two
// credentials of one order, past their checks at the same moment, both be broadcast?

const PATH = '/api/agents/seller/tasks/summary'
const ORDER = { params: { q: 'claims' }, buyer: 'claims' }

/**
 * A market on `node` (its chain reached through `client`), one seller (registered unless `shared`: another node on
 * the same database did), and a buyer's real mppx client (pull).
 */
async function market(node: ScriptedTempo, client: Client, store?: Store, shared = false) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    store,
    mpp: {
      secretKey: 'mpp-claims-secret-key-of-32-bytes!!',
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => client,
    },
  })
  if (!shared) {
    const { key } = await app.register('seller', {
      skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }],
    })
    await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: tempoPayer(1).address } })
  }
  const handle = (init: RequestInit) => app.app.handle(new Request(`http://localhost${PATH}`, init))
  const buyer = MppxClient.create({
    polyfill: false,
    methods: [
      tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client'), mode: 'pull' }),
    ],
  })
  /** A new credential for ORDER, from its own 402 (push: a hash of the transfer the buyer sent itself). */
  const credential = async (mode: 'pull' | 'push' = 'pull') =>
    (mode === 'pull' ? buyer : pusher(node)).createCredential(await handle(post()))
  return { handle, credential }
}

/** A buyer's real mppx client in push mode: it sends its transfer to `node` and hands over the hash. */
const pusher = (node: ScriptedTempo) =>
  MppxClient.create({
    polyfill: false,
    methods: [
      tempoClient.charge({ account: tempoPayer(3), getClient: () => node.client('client'), mode: 'push' }),
    ],
  })

const post = (authorization?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
  body: JSON.stringify(ORDER),
})

/**
 * A client of `node` whose simulations each wait until two are waiting, or `open` is called (an order answered):
 * two orders reach their claims together.
 */
function gatedSimulations(node: ScriptedTempo) {
  const server = node.client('server')
  const waiting: (() => void)[] = []
  const open = () => {
    for (const release of waiting.splice(0)) release()
  }
  const client = createClient({
    chain: server.chain,
    transport: custom({
      async request({ method, params }) {
        if (method === 'eth_call') {
          const released = new Promise<void>((release) => waiting.push(release))
          if (waiting.length >= 2) open()
          await released
        }
        return server.request({ method, params } as never)
      },
    }),
  })
  return { client, open }
}

/** Sends each credential to its market at once; answers each status and problem code. */
async function atOnce(
  orders: { shop: { handle: (init: RequestInit) => Promise<Response> }; authorization: string }[],
  open: () => void,
) {
  return Promise.all(
    orders.map(async ({ shop, authorization }) => {
      const answer = await shop.handle(post(authorization))
      open()
      return { status: answer.status, code: ((await answer.json()) as { code?: string }).code }
    }),
  )
}

/** Paid tasks in the store. */
async function paidTasks(store: Store) {
  const page = await store.listTasks('seller', { statuses: ['paid'], order: 'history', limit: 10, offset: 0 })
  return page.total
}

const broadcasts = (node: ScriptedTempo) =>
  node.calls.filter((call) => call.side === 'server' && call.method.startsWith('eth_sendRawTransaction'))
    .length

describe('MPP order claims', () => {
  test('a paid pull order writes the store twice: its claims with the replay marker in one write, then its task', async () => {
    const node = scriptedTempo()
    const { store, state } = countedWrites(libsqlStore(await openDatabase(':memory:')))
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential()
    state.counting = true
    const answer = await shop.handle(post(authorization))
    state.counting = false
    expect(answer.status).toBe(201)
    expect(state.writes).toEqual(['kvUpdateAll', 'insertTask'])
  })

  test("a paid hash order writes the store once: its task, whose unique transaction hash is the transfer's claim, in the same commit", async () => {
    const node = scriptedTempo()
    const { store, state } = countedWrites(libsqlStore(await openDatabase(':memory:')))
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    state.counting = true
    const answer = await shop.handle(post(authorization))
    state.counting = false
    expect(answer.status).toBe(201)
    expect(state.writes).toEqual(['insertTask'])
    // The same credential again answers the task it paid (200), and writes nothing.
    state.counting = true
    const again = await shop.handle(post(authorization))
    state.counting = false
    expect(again.status).toBe(200)
    expect(((await again.json()) as { task_id: string }).task_id).toBe(
      ((await answer.json()) as { task_id: string }).task_id,
    )
    expect(state.writes).toEqual(['insertTask'])
    expect(await paidTasks(store)).toBe(1)
  })

  test('attack: two credentials of one payer for one order, past their checks at once: one is broadcast and buys the task, the other is refused and never sent', async () => {
    const node = scriptedTempo()
    const { client, open } = gatedSimulations(node)
    const store = libsqlStore(await openDatabase(':memory:'))
    const shop = await market(node, client, store)
    const first = await shop.credential()
    const second = await shop.credential()
    expect(second).not.toBe(first)
    const answers = await atOnce(
      [first, second].map((authorization) => ({ shop, authorization })),
      open,
    )
    // The other is refused: 409 when both claimed at once, or 402 (its transfer used) when it read the first's claim
    // and was served with the first credential.
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
    const refused = answers.find((answer) => answer.status !== 201)
    expect([409, 402]).toContain(refused?.status ?? 0)
    if (refused?.status === 409) expect(refused.code).toBe('task_not_pending')
    expect(broadcasts(node)).toBe(1)
    expect(node.mined()).toHaveLength(1)
    expect(await paidTasks(store)).toBe(1)
  })
})

describe('MPP order claims on two nodes of one PostgreSQL database', () => {
  const database = startMigratedPostgres()
  afterAll(async () => (await database).stop())

  /** Two markets (two pools) on one fresh database, on one node of the network. */
  async function twoNodes() {
    const url = await (await database).freshUrl()
    const node = scriptedTempo()
    const { client, open } = gatedSimulations(node)
    const stores = [
      await postgresStore(await openPostgres(url, { max: 4 })),
      await postgresStore(await openPostgres(url, { max: 4 })),
    ] as const
    const first = await market(node, client, stores[0])
    const second = await market(node, client, stores[1], true)
    return { node, open, stores, shops: [first, second] as const }
  }

  test('attack: one credential sent to both nodes at once is broadcast once and buys one task', async () => {
    const { node, open, stores, shops } = await twoNodes()
    const authorization = await shops[0].credential()
    const answers = await atOnce(
      shops.map((shop) => ({ shop, authorization })),
      open,
    )
    expect(answers.filter((answer) => answer.status < 300)).not.toHaveLength(0)
    expect(broadcasts(node)).toBe(1)
    expect(node.mined()).toHaveLength(1)
    expect(await paidTasks(stores[0])).toBe(1)
  })

  test('attack: two credentials of one payer for one order, one to each node at once: one is broadcast and buys the task', async () => {
    const { node, open, stores, shops } = await twoNodes()
    const first = await shops[0].credential()
    const second = await shops[1].credential()
    const answers = await atOnce(
      [
        { shop: shops[0], authorization: first },
        { shop: shops[1], authorization: second },
      ],
      open,
    )
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
    expect([409, 402]).toContain(answers.find((answer) => answer.status !== 201)?.status ?? 0)
    expect(broadcasts(node)).toBe(1)
    expect(node.mined()).toHaveLength(1)
    expect(await paidTasks(stores[0])).toBe(1)
  })

  test('attack: one hash credential sent to both nodes at once buys one task (its task is its claim)', async () => {
    const { node, open, stores, shops } = await twoNodes()
    const authorization = await shops[0].credential('push')
    const answers = await atOnce(
      shops.map((shop) => ({ shop, authorization })),
      open,
    )
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
    // The other answers the same task (200), or is refused when it read the first's task mid-write.
    expect([200, 402, 409]).toContain(answers.find((answer) => answer.status !== 201)?.status ?? 0)
    expect(node.mined()).toHaveLength(1)
    expect(await paidTasks(stores[0])).toBe(1)
  })
})

describe("MPP order claims: a hash credential's task is its claim", () => {
  test("fault: the task's commit fails after a hash credential is verified: nothing is recorded, and the same credential then pays once", async () => {
    const node = scriptedTempo()
    const { store, failing } = await failingInserts()
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    failing.next = true
    expect((await shop.handle(post(authorization))).status).toBeGreaterThanOrEqual(500)
    expect(await paidTasks(store)).toBe(0)
    const answer = await shop.handle(post(authorization))
    expect(answer.status).toBe(201)
    expect((await shop.handle(post(authorization))).status).toBe(200)
    expect(await paidTasks(store)).toBe(1)
  })

  /** Runs `work` with the clock past every challenge made before it (mppx's are valid five minutes). */
  async function afterChallengesExpired<T>(work: () => Promise<T>): Promise<T> {
    setSystemTime(new Date(Date.now() + 6 * 60_000))
    try {
      return await work()
    } finally {
      setSystemTime()
    }
  }

  test('a hash credential paid in time, its answer lost: sent again after its challenge expired, it answers the task it paid (200), by design, and pays nothing more', async () => {
    const node = scriptedTempo()
    const store = libsqlStore(await openDatabase(':memory:'))
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    const paid = await shop.handle(post(authorization))
    expect(paid.status).toBe(201)
    const { task_id } = (await paid.json()) as { task_id: string }
    // The retry is found through its task, whose insert claimed the transfer when the challenge was still valid: it
    // accepts nothing new, so the challenge's expiry has nothing left to guard.
    const again = await afterChallengesExpired(() => shop.handle(post(authorization)))
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(((await again.json()) as { task_id: string }).task_id).toBe(task_id)
    expect(await paidTasks(store)).toBe(1)
    expect(node.mined()).toHaveLength(1)
  })

  /** A Store whose next insertTask fails (`failing.next`), as a disk that fails the task's commit. */
  async function failingInserts() {
    const inner = libsqlStore(await openDatabase(':memory:'))
    const failing = { next: false }
    const store = new Proxy(inner, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver)
        if (name !== 'insertTask') return typeof value === 'function' ? value.bind(target) : value
        return (...args: Parameters<Store['insertTask']>) => {
          if (!failing.next) return target.insertTask(...args)
          failing.next = false
          return Promise.reject(new Error('disk I/O error'))
        }
      },
    })
    return { store, failing }
  }

  test("fault: a hash credential verified in time whose task's commit failed, sent again after its challenge expired: the transfer made in time pays the order once (201), then answers its task (200)", async () => {
    const node = scriptedTempo()
    const { store, failing } = await failingInserts()
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    failing.next = true
    expect((await shop.handle(post(authorization))).status).toBeGreaterThanOrEqual(500)
    expect(await paidTasks(store)).toBe(0)
    const answers = await afterChallengesExpired(async () => [
      await shop.handle(post(authorization)),
      await shop.handle(post(authorization)),
    ])
    expect(answers.map((answer) => answer.status)).toEqual([201, 200])
    expect(answers[0]?.headers.get('payment-receipt')).not.toBeNull()
    const [first, again] = (await Promise.all(answers.map((answer) => answer.json()))) as {
      task_id: string
    }[]
    expect(again?.task_id).toBe(first?.task_id)
    expect(await paidTasks(store)).toBe(1)
    expect(node.mined()).toHaveLength(1)
  })

  test('fault: a hash the network could not show mined (503), sent again after its challenge expired: mined in time, it pays the order once (503 again while the network still cannot show it)', async () => {
    const node = scriptedTempo()
    const store = libsqlStore(await openDatabase(':memory:'))
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    node.failNextReceipt()
    const unseen = await shop.handle(post(authorization))
    expect(unseen.status).toBe(503)
    expect(await paidTasks(store)).toBe(0)
    const late = await afterChallengesExpired(async () => {
      // Past the expiry too, a network that cannot show the receipt is no refusal: 503 again, nothing recorded.
      node.failNextReceipt()
      const unreadable = await shop.handle(post(authorization))
      expect(unreadable.status).toBe(503)
      expect(await paidTasks(store)).toBe(0)
      return shop.handle(post(authorization))
    })
    expect(late.status).toBe(201)
    expect(await paidTasks(store)).toBe(1)
  })

  test("attack: a hash credential whose task's commit failed, sent three times at once after its challenge expired: one task, the others answer it (200) or are refused, never a second", async () => {
    const node = scriptedTempo()
    const { store, failing } = await failingInserts()
    const shop = await market(node, node.client('server'), store)
    const authorization = await shop.credential('push')
    failing.next = true
    expect((await shop.handle(post(authorization))).status).toBeGreaterThanOrEqual(500)
    const answers = await afterChallengesExpired(() =>
      Promise.all([1, 2, 3].map(() => shop.handle(post(authorization)))),
    )
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    for (const status of statuses.filter((other) => other !== 201)) expect([200, 409]).toContain(status)
    expect(await paidTasks(store)).toBe(1)
  })

  test('attack: the hash of a transfer mined after its challenge expired pays nothing and records nothing, however often it is sent again', async () => {
    const node = scriptedTempo()
    const store = libsqlStore(await openDatabase(':memory:'))
    const shop = await market(node, node.client('server'), store)
    // The chain mines the buyer's transfer in a block stamped after the challenge's five minutes (its clock is ahead).
    node.advanceTime(6 * 60)
    const authorization = await shop.credential('push')
    const answers = await afterChallengesExpired(async () => ({
      late: [await shop.handle(post(authorization)), await shop.handle(post(authorization))],
    }))
    for (const answer of answers.late) {
      expect(answer.status).toBe(402)
      expect(answer.headers.get('payment-receipt')).toBeNull()
    }
    expect(await paidTasks(store)).toBe(0)
    // Back within the challenge's five minutes, the same credential pays: only the expiry refused it.
    expect((await shop.handle(post(authorization))).status).toBe(201)
  })

  test("attack: past the expiry, a hash copied from the chain under one's own challenge, or someone else's transaction under a challenge it did not pay, pays nothing; the payer's own credential still pays once", async () => {
    const node = scriptedTempo()
    const store = libsqlStore(await openDatabase(':memory:'))
    const shop = await market(node, node.client('server'), store)
    const [{ Challenge, Credential }] = await Promise.all([import('mppx')])
    const paid = await shop.credential('push')
    const { hash } = Credential.deserialize(Credential.extractPaymentScheme(paid) ?? '').payload as {
      hash: string
    }
    // An observer's own challenge for the same order, with the payer's hash (public once mined).
    const observers = Challenge.fromResponse(await shop.handle(post()))
    const copied = Credential.serialize(
      Credential.from({ challenge: observers, payload: { type: 'hash', hash } }),
    )
    // Another buyer's transfer (for its own challenge) named under the payer's challenge.
    const others = await shop.credential('push')
    const otherHash = (
      Credential.deserialize(Credential.extractPaymentScheme(others) ?? '').payload as { hash: string }
    ).hash
    const swapped = Credential.serialize({
      ...Credential.deserialize(Credential.extractPaymentScheme(paid) ?? ''),
      payload: { type: 'hash', hash: otherHash },
    })
    const answers = await afterChallengesExpired(async () => [
      await shop.handle(post(copied)),
      await shop.handle(post(swapped)),
      await shop.handle(post(paid)),
      await shop.handle(post(copied)),
    ])
    expect(answers.map((answer) => answer.status)).toEqual([402, 402, 201, 402])
    expect(await paidTasks(store)).toBe(1)
  })
})
