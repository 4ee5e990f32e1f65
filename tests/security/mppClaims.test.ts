import { describe, expect, test } from 'bun:test'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { type Client, createClient, custom } from 'viem'
import type { Store } from '../../packages/core/src/index.ts'
import { STORE_READ_METHODS } from '../../packages/core/src/ports/storeReads.ts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { libsqlStore, openDatabase } from '../../packages/store-libsql/src/index.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../support/tempo.ts'

// A paid MPP order claims its order (scoped to its payer) and its transfer's replay marker in one store write, at
// the broadcast, once the credential is checked and its transfer simulated. The attacker's question: can two
// credentials of one order, past their checks at the same moment, both be broadcast?

const PATH = '/api/agents/seller/tasks/summary'
const ORDER = { params: { q: 'claims' }, buyer: 'claims' }

/** The store's writes by method, counted while `counting` is on (reads are left out). */
function countedWrites(store: Store) {
  const writes: string[] = []
  const state = { counting: false, writes }
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof name !== 'string' || typeof value !== 'function' || STORE_READ_METHODS.has(name))
        return typeof value === 'function' ? value.bind(target) : value
      return (...args: unknown[]) => {
        if (state.counting) writes.push(name)
        return value.apply(target, args)
      }
    },
  })
  return { store: counted, state }
}

/** A market on `node` (its chain reached through `client`), one seller, and a buyer's real mppx client (pull). */
async function market(node: ScriptedTempo, client: Client, store?: Store) {
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    store,
    mpp: {
      secretKey: 'mpp-claims-secret-key-of-32-bytes!!',
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => client,
    },
  })
  const { key } = await app.register('seller', {
    skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }],
  })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: tempoPayer(1).address } })
  const handle = (init: RequestInit) => app.app.handle(new Request(`http://localhost${PATH}`, init))
  const buyer = MppxClient.create({
    polyfill: false,
    methods: [
      tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client'), mode: 'pull' }),
    ],
  })
  /** A new credential for ORDER, from its own 402. */
  const credential = async () => buyer.createCredential(await handle(post()))
  const paidTasks = async () =>
    (
      (await app.call('GET', '/api/agents/seller/tasks?status=all', { key })).json.tasks as {
        status: string
      }[]
    ).filter((task) => task.status === 'paid').length
  return { handle, credential, paidTasks }
}

const post = (authorization?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
  body: JSON.stringify(ORDER),
})

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

  test('attack: two credentials of one payer for one order, past their checks at once: one is broadcast and buys the task, the other is refused and never sent', async () => {
    const node = scriptedTempo()
    const server = node.client('server')
    // Each simulation waits until both orders have simulated (or one has answered): both reach their claims together.
    const waiting: (() => void)[] = []
    const open = () => {
      for (const release of waiting.splice(0)) release()
    }
    const gated = createClient({
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
    const shop = await market(node, gated)
    const first = await shop.credential()
    const second = await shop.credential()
    expect(second).not.toBe(first)
    const answers = await Promise.all(
      [first, second].map(async (authorization) => {
        const answer = await shop.handle(post(authorization))
        open()
        return { status: answer.status, code: ((await answer.json()) as { code?: string }).code }
      }),
    )
    // The other is refused: 409 when both claimed at once, or 402 (its transfer used) when it read the first's claim
    // and was served with the first credential.
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
    const refused = answers.find((answer) => answer.status !== 201)
    expect([409, 402]).toContain(refused?.status ?? 0)
    if (refused?.status === 409) expect(refused.code).toBe('task_not_pending')
    expect(broadcasts(node)).toBe(1)
    expect(node.mined()).toHaveLength(1)
    expect(await shop.paidTasks()).toBe(1)
  })
})
