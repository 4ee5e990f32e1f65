import { beforeAll, describe, expect, test } from 'bun:test'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { recordingRateLimits } from '../../packages/server/src/testing/rateLimits.ts'
import { A2A_HEADERS, rpc } from '../support/a2aClient.ts'
import { recordingFacilitator } from '../support/x402.ts'

// Attack (issue 37, an independent attack on main): ListTasks with pageSize 1 on a conversation of 100 unpaid orders
// read all 100 tasks and built each one's x402 requirements before cutting the page: 16.7 ms of CPU per call, charged
// as one read (0.15 ms). A listing now reads and builds only its page, and spends a read token per task it may hold.
// Work is counted (the market's task reads and x402 requirement builds), never timed.

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const ORDERS = 100

type App = Awaited<ReturnType<typeof market>>

/** A market (x402 on, rate limits recorded and generous) whose seller sells a paid skill, and counters of its work. */
async function market() {
  const { rateLimits, spent } = recordingRateLimits()
  const { facilitator } = recordingFacilitator()
  const app = await testApp(undefined, {
    x402: { facilitator },
    rateLimits,
  })
  const { key } = await app.register('seller', {
    skills: [{ name: 'Echo', type: 'purchasable', price: '1' }],
  })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: WALLET } })
  // The work a listing does, counted where the A2A handler asks the market for it.
  const work = { taskReads: 0, queueReads: [] as number[], x402Builds: 0 }
  const { getTask, listTasks, x402PaymentRequired } = app.market
  app.market.getTask = (...args) => {
    work.taskReads++
    return getTask(...args)
  }
  app.market.listTasks = (agent, apiKey, query) => {
    work.queueReads.push(Number((query as { limit?: number }).limit))
    return listTasks(agent, apiKey, query)
  }
  app.market.x402PaymentRequired = (...args) => {
    work.x402Builds++
    return x402PaymentRequired(...args)
  }
  /** Runs `call` and answers what it cost: the market's work and the rate tokens it spent. */
  const measured = async <T>(call: () => Promise<T>) => {
    Object.assign(work, { taskReads: 0, queueReads: [], x402Builds: 0 })
    spent.length = 0
    const answer = await call()
    return { answer, work: { ...work }, tokens: spent.filter((one) => one.bucket === 'read') }
  }
  return { ...app, key, measured }
}

/** One JSON-RPC call of A2A at the seller's interface. */
const sellerRpc = (app: App, method: string, params: unknown, headers: Record<string, string> = {}) =>
  rpc(app, '/a2a/agents/seller', method, params, headers)

let app: App
let contextId = ''

beforeAll(async () => {
  app = await market()
  for (let index = 0; index < ORDERS; index++) {
    const answer = await sellerRpc(app, 'SendMessage', {
      message: {
        messageId: `m${index}`,
        role: 'ROLE_USER',
        contextId,
        parts: [{ data: { skill: 'echo', params: { index } } }],
      },
    })
    contextId = answer.json.result.task.contextId
  }
  // 100 orders take a few seconds on a busy machine: a bound, not a measure.
}, 300_000)

describe('ListTasks costs what its page holds', () => {
  test('attack: pageSize 1 on a 100-order conversation reads and builds one task, over both bindings, and spends one read', async () => {
    const jsonRpc = await app.measured(() => sellerRpc(app, 'ListTasks', { contextId, pageSize: 1 }))
    expect(jsonRpc.answer.json.result).toMatchObject({ totalSize: ORDERS, nextPageToken: '1', pageSize: 1 })
    expect(jsonRpc.answer.json.result.tasks).toHaveLength(1)
    expect(jsonRpc.work).toEqual({ taskReads: 1, queueReads: [], x402Builds: 1 })
    expect(jsonRpc.tokens).toEqual([{ bucket: 'read', tokens: 1 }])
    // The page carries the x402 requirements of its unpaid task.
    expect(jsonRpc.answer.json.result.tasks[0].status.message.metadata['x402.payment.status']).toBe(
      'payment-required',
    )

    const rest = await app.measured(() =>
      app.call('GET', `/a2a/agents/seller/rest/tasks?contextId=${contextId}&pageSize=1&pageToken=99`, {
        headers: A2A_HEADERS,
      }),
    )
    // The last page: HTTP+JSON leaves out an empty nextPageToken (proto3's JSON).
    expect(rest.answer.json).toMatchObject({ totalSize: ORDERS, pageSize: 1 })
    expect(rest.answer.json.nextPageToken ?? '').toBe('')
    expect(rest.answer.json.tasks).toHaveLength(1)
    expect(rest.work).toEqual({ taskReads: 1, queueReads: [], x402Builds: 1 })
    expect(rest.tokens).toEqual([{ bucket: 'read', tokens: 1 }])
  })

  test('behavior: paging with pageSize 1 walks the whole conversation once, in order', async () => {
    const whole = await sellerRpc(app, 'ListTasks', { contextId, pageSize: 100 })
    const ids: string[] = []
    for (let token = '0'; token !== ''; ) {
      const page = (await sellerRpc(app, 'ListTasks', { contextId, pageSize: 1, pageToken: token })).json
        .result
      ids.push(...page.tasks.map((task: { id: string }) => task.id))
      token = page.nextPageToken
    }
    expect(ids).toEqual(whole.json.result.tasks.map((task: { id: string }) => task.id))
    expect(new Set(ids).size).toBe(ORDERS)
  })

  test('behavior: a full page builds what it holds and spends a read per task; a state filter reads all and spends a full page', async () => {
    const full = await app.measured(() => sellerRpc(app, 'ListTasks', { contextId, pageSize: 100 }))
    expect(full.answer.json.result.tasks).toHaveLength(ORDERS)
    expect(full.work).toEqual({ taskReads: ORDERS, queueReads: [], x402Builds: ORDERS })
    expect(full.tokens).toEqual([{ bucket: 'read', tokens: 100 }])

    const filtered = await app.measured(() =>
      sellerRpc(app, 'ListTasks', { contextId, pageSize: 2, status: 'TASK_STATE_INPUT_REQUIRED' }),
    )
    expect(filtered.answer.json.result).toMatchObject({ totalSize: ORDERS, nextPageToken: '2' })
    // Every task is read to know its state; only the page is built.
    expect(filtered.work).toEqual({ taskReads: ORDERS, queueReads: [], x402Builds: 2 })
    expect(filtered.tokens).toEqual([{ bucket: 'read', tokens: 100 }])

    const none = await sellerRpc(app, 'ListTasks', { contextId, status: 'TASK_STATE_WORKING' })
    expect(none.json.result).toMatchObject({ tasks: [], totalSize: 0, nextPageToken: '' })
  })

  test('attack: the seller queue with pageSize 1 reads one task of the queue and builds one', async () => {
    const queue = await app.measured(() =>
      sellerRpc(app, 'ListTasks', { pageSize: 1 }, { authorization: `Bearer ${app.key}` }),
    )
    expect(queue.answer.json.result).toMatchObject({ totalSize: ORDERS, nextPageToken: '1' })
    expect(queue.answer.json.result.tasks).toHaveLength(1)
    // The queue shows each task under its own id, never the buyer's conversation.
    const [task] = queue.answer.json.result.tasks
    expect(task.contextId).toBe(task.id)
    expect(queue.work).toEqual({ taskReads: 0, queueReads: [1], x402Builds: 1 })
    expect(queue.tokens).toEqual([{ bucket: 'read', tokens: 1 }])
  })
})
