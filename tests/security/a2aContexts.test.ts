import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Task } from '@a2a-js/sdk'
import ts from 'typescript'
import {
  A2A_METHOD_NAMES,
  A2A_METHODS,
  type A2aMethod,
  a2aJsonRpcMethod,
  a2aRestMethod,
} from '../../packages/server/src/a2a/methods.ts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { recordingRateLimits } from '../../packages/server/src/testing/rateLimits.ts'
import {
  A2A_HEADERS,
  order,
  rpc,
  sdkClient,
  sdkMessage,
  type WireTask,
  wireMessage,
} from '../support/a2aClient.ts'

// Conversations (A2A contexts) belong to the party that opened them: an answer shows a conversation's id only to a
// request that presented it. The task id is known to the buyer and the seller alike, so an answer to a request that
// presents a task id (GetTask, a follow-up SendMessage, the seller's queue) shows the task id as contextId. Part one
// attacks finding 1 of issue 37 as a seller would; part two is the access matrix of every operation in the A2A table
// (packages/server/src/a2a/methods.ts) over both bindings, both kinds of interface and every principal.

const MADE_UP_TASK = 'task_0123456789abcdef0123456789abcdef'

/** A market where the buyer talks to `seller` and `other`, with a recording of the rate buckets each request spends. */
async function market() {
  const { rateLimits, spent } = recordingRateLimits()
  const app = await testApp(undefined, { rateLimits })
  const { key } = await app.register('seller', { skills: ['Echo'] })
  const { key: otherKey } = await app.register('other', { skills: ['Echo'] })
  return { ...app, key, otherKey, spent }
}

type Market = Awaited<ReturnType<typeof market>>

/** Through the marketplace's agent: order `agent`'s echo with a note only the buyer and that seller should see. */
const viaMarket = (agent: string, note: string) => ({
  skill: 'order-skill',
  params: { agent, skill: 'echo', params: { note } },
})

/**
 * The buyer's conversations: on the marketplace's interface, `a` (with seller) and `b` (with other); on seller's own
 * interface, `c` and `d`; on other's, `e`. Each order carries a note naming it, so an answer that shows its params
 * shows it even without its id.
 */
async function conversations(app: Market) {
  const a = await order(app, '/a2a', viaMarket('seller', 'note-of-a'))
  const b = await order(app, '/a2a', viaMarket('other', 'note-of-b'), { contextId: a.contextId })
  const c = await order(app, '/a2a/agents/seller', { skill: 'echo', params: { note: 'note-of-c' } })
  const d = await order(
    app,
    '/a2a/agents/seller',
    { skill: 'echo', params: { note: 'note-of-d' } },
    { contextId: c.contextId },
  )
  const e = await order(app, '/a2a/agents/other', { skill: 'echo', params: { note: 'note-of-e' } })
  expect(b.contextId).toBe(a.contextId)
  expect(d.contextId).toBe(c.contextId)
  const tasks = { a: a.id, b: b.id, c: c.id, d: d.id, e: e.id } as Record<TaskName, string>
  return {
    tasks,
    threads: { market: a.contextId as string, agent: c.contextId as string, other: e.contextId as string },
  }
}

type TaskName = 'a' | 'b' | 'c' | 'd' | 'e'

/** Which of the buyer's tasks an answer shows (by id or by the note in its params). */
const visibleIn = (text: string, tasks: Record<TaskName, string>) =>
  (Object.keys(tasks) as TaskName[]).filter(
    (name) => text.includes(tasks[name]) || text.includes(`note-of-${name}`),
  )

describe('A2A conversations: a seller never learns a buyer’s contextId', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
    test(`attack (${binding}, SDK client): a seller reads its own order on the marketplace’s interface (GetTask, a follow-up SendMessage) and lists, joins or adds to whatever contextId it is shown: the buyer’s orders with other sellers stay hidden and its conversation untouched`, async () => {
      const app = await market()
      const { tasks, threads } = await conversations(app)
      await app.call('POST', `/api/agents/other/tasks/${tasks.b}/complete`, {
        key: app.otherKey,
        body: { result_url: 'https://results.example/b-private.json' },
      })
      // The seller, as an A2A client of the marketplace's card, with its key and the id of its own order.
      const seller = await sdkClient(app, binding, 'http://localhost:3000/', {
        authorization: `Bearer ${app.key}`,
      })
      const read = await seller.getTask({ tenant: '', id: tasks.a, historyLength: undefined })
      const followed = (await seller.sendMessage({
        tenant: '',
        message: sdkMessage({}, { taskId: tasks.a }),
        configuration: undefined,
        metadata: undefined,
      })) as Task
      const shown = new Set([read.contextId, followed.contextId])
      expect({ getTask: read.contextId, followUp: followed.contextId }).toEqual({
        getTask: tasks.a,
        followUp: tasks.a,
      })
      const leaked: string[] = []
      const injected: string[] = []
      for (const contextId of shown) {
        const listed = await seller.listTasks({
          tenant: '',
          contextId,
          status: 0,
          pageSize: 100,
          pageToken: '',
          historyLength: undefined,
          statusTimestampAfter: undefined,
          includeArtifacts: true,
        })
        leaked.push(JSON.stringify(listed))
        const added = (await seller.sendMessage({
          tenant: '',
          message: sdkMessage(viaMarket('seller', 'seller-injected'), { contextId }),
          configuration: undefined,
          metadata: undefined,
        })) as Task
        injected.push(added.id)
        expect(added.contextId).not.toBe(threads.market)
      }
      const text = leaked.join('\n')
      expect({
        otherSellersTask: text.includes(tasks.b),
        itsParams: text.includes('note-of-b'),
        itsResult: text.includes('b-private.json'),
        theThread: text.includes(threads.market),
      }).toEqual({ otherSellersTask: false, itsParams: false, itsResult: false, theThread: false })
      // The buyer's conversation holds its two orders, none of the seller's.
      const buyers = await rpc(app, '/a2a', 'ListTasks', { contextId: threads.market, pageSize: 100 })
      expect(buyers.json.result.tasks.map((task: { id: string }) => task.id).sort()).toEqual(
        [tasks.a, tasks.b].sort(),
      )
      expect(injected.length).toBeGreaterThan(0)
    })

  test('attack: a seller’s queue and GetTask on its own interface, over both bindings, show its orders under their task ids: it cannot add orders to the buyer’s conversation there', async () => {
    const app = await market()
    const { tasks, threads } = await conversations(app)
    const bearer = { authorization: `Bearer ${app.key}` }
    const answers = [
      await rpc(app, '/a2a/agents/seller', 'ListTasks', {}, bearer),
      await rpc(app, '/a2a/agents/seller', 'GetTask', { id: tasks.c }, bearer),
      await rpc(app, '/a2a/agents/seller', 'SendMessage', wireMessage({}, { taskId: tasks.c }), bearer),
      await app.call('GET', '/a2a/agents/seller/rest/tasks', { headers: { ...A2A_HEADERS, ...bearer } }),
      await app.call('GET', `/a2a/agents/seller/rest/tasks/${tasks.c}`, { headers: A2A_HEADERS }),
      await app.call('POST', '/a2a/agents/seller/rest/message:send', {
        body: wireMessage({}, { taskId: tasks.c }),
        headers: A2A_HEADERS,
      }),
    ]
    for (const [index, answer] of answers.entries()) {
      expect(answer.status, `answer ${index}`).toBe(200)
      expect(answer.text, `answer ${index}`).toContain(tasks.c)
      expect(answer.text, `answer ${index}`).not.toContain(threads.agent)
    }
    const queue = answers[0]?.json.result.tasks as { id: string; contextId: string }[]
    for (const task of queue) expect(task.contextId).toBe(task.id)
  })

  test('behavior: the buyer who presents its contextId sees it; a task id shown as contextId lists that task alone', async () => {
    const app = await market()
    const { tasks, threads } = await conversations(app)
    const followed = await rpc(
      app,
      '/a2a',
      'SendMessage',
      wireMessage({}, { taskId: tasks.b, contextId: threads.market }),
    )
    expect(followed.json.result.task.contextId).toBe(threads.market)
    // Another conversation's contextId with this task: the task's own is not revealed.
    const mismatched = await rpc(
      app,
      '/a2a/agents/seller',
      'SendMessage',
      wireMessage({}, { taskId: tasks.c, contextId: threads.market }),
    )
    expect(mismatched.json.result.task.contextId).toBe(tasks.c)
    const alone = await app.call('GET', `/a2a/rest/tasks?contextId=${tasks.a}`, { headers: A2A_HEADERS })
    expect(
      alone.json.tasks.map((task: { id: string; contextId: string }) => [task.id, task.contextId]),
    ).toEqual([[tasks.a, tasks.a]])
  })

  test('guard: no HTTP answer, MCP answer, feed event, webhook payload or read-task answer carries a conversation’s id (none did before: thread ids live only in the A2A handler)', async () => {
    const app = await market()
    const hook = await app.call('POST', '/api/agents/seller/webhooks', {
      key: app.key,
      body: { url: 'https://hooks.example/seller' },
    })
    expect(hook.status, hook.text).toBe(201)
    const { tasks, threads } = await conversations(app)
    await app.call('POST', `/api/agents/seller/tasks/${tasks.a}/complete`, {
      key: app.key,
      body: { result_url: 'https://results.example/a.json' },
    })
    await app.market.fanOutWebhooks()
    const deliveries = await app.store.listDeliveries(hook.json.id, 100)
    expect(deliveries.length).toBeGreaterThan(0)
    const answers = [
      await app.call('GET', `/api/agents/seller/tasks/${tasks.a}`),
      await app.call('GET', '/api/agents/seller/tasks?status=all&limit=100', { key: app.key }),
      await app.call('GET', '/api/feed/live?limit=100'),
      await app.call('POST', '/mcp', {
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'get_task', arguments: { agent: 'seller', task_id: tasks.a } },
        },
        headers: {
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
      }),
    ]
    // The marketplace's read-task skill, asked by the seller with its key on both bindings.
    const readTask = wireMessage({ skill: 'read-task', params: { agent: 'seller', task_id: tasks.a } })
    const bearer = { ...A2A_HEADERS, authorization: `Bearer ${app.key}` }
    answers.push(
      await rpc(app, '/a2a', 'SendMessage', readTask, bearer),
      await app.call('POST', '/a2a/rest/message:send', { body: readTask, headers: bearer }),
    )
    const texts = [...answers.map((answer) => answer.text), ...deliveries.map((delivery) => delivery.payload)]
    for (const [index, answer] of answers.entries())
      expect(answer.status, `answer ${index}: ${answer.text.slice(0, 200)}`).toBe(200)
    for (const [index, text] of texts.entries()) {
      // The public feed names no task; every other answer is about task a (the checks below are not vacuous).
      if (index !== 2) expect(text, `answer ${index}`).toContain(tasks.a)
      for (const thread of Object.values(threads)) expect(text, `answer ${index}`).not.toContain(thread)
    }
  })
})

// ---------------------------------------------------------------------------------------------------------------
// The access matrix: every operation of the A2A table x both bindings x both kinds of interface x every principal.

type Kind = 'market' | 'agent'
type Principal = 'anonymous' | 'seller' | 'otherSeller' | 'buyerTask' | 'buyerContext'
const PRINCIPALS: Principal[] = ['anonymous', 'seller', 'otherSeller', 'buyerTask', 'buyerContext']

/** The interface of each kind: the marketplace's, or seller's own. */
const INTERFACE: Record<Kind, string> = { market: '/a2a', agent: '/a2a/agents/seller' }
const CARD: Record<Kind, string> = {
  market: '/.well-known/agent-card.json',
  agent: '/api/agents/seller/.well-known/agent-card.json',
}
/** The buyer's conversation on each kind, and the tasks in it. */
const CONVERSATION: Record<Kind, TaskName[]> = { market: ['a', 'b'], agent: ['c', 'd'] }
/** The tasks each kind reads by id: the marketplace's conversations' orders; an agent's own orders. */
const READABLE: Record<Kind, TaskName[]> = { market: ['a', 'b'], agent: ['a', 'c', 'd'] }

/** What a principal holds: a key, the task id it knows (none: it makes one up), the contextId it was given. */
function holds(principal: Principal, kind: Kind, app: Market) {
  const sellers: Record<Kind, TaskName> = { market: 'a', agent: 'c' }
  if (principal === 'seller') return { key: app.key, task: sellers[kind] }
  if (principal === 'otherSeller')
    return { key: app.otherKey, task: (kind === 'market' ? 'b' : 'e') as TaskName }
  if (principal === 'buyerTask') return { task: sellers[kind] }
  if (principal === 'buyerContext') return { task: sellers[kind], context: true }
  return {}
}

/** One request of the matrix: a JSON-RPC method's params, and the same operation's HTTP+JSON path and body. */
type Call = { params: Record<string, unknown>; restPath: string; body?: unknown }

/**
 * Each operation's request from what a principal holds (`task`: its task id; `context`: the buyer's contextId) and
 * what it may read: success, the buyer's tasks shown, whether the conversation's id is shown. An operation of the
 * table without an entry here fails the matrix.
 */
type Cell = (holding: {
  task: string
  context: string
  taskName: TaskName | null
  kind: Kind
  principal: Principal
}) => {
  calls: Call[]
  ok: boolean
  visible: TaskName[]
  thread: boolean
}

/** What a refused operation answers everyone: an error, nothing of the buyer's. */
const REFUSED = { ok: false, visible: [] as TaskName[], thread: false }

/** The buyer's task named `name` when `kind` reads it by id. */
const readableById = (kind: Kind, name: TaskName | null) =>
  name && READABLE[kind].includes(name) ? [name] : []

const MATRIX: Record<A2aMethod, Cell> = {
  getAgentCard: () => ({ calls: [], ok: true, visible: [], thread: false }),
  getAuthenticatedExtendedAgentCard: () => ({
    ...REFUSED,
    calls: [{ params: {}, restPath: '/extendedAgentCard' }],
  }),
  sendMessage: ({ task, context, taskName, kind, principal }) => {
    const skillOrder = kind === 'market' ? viaMarket('seller', 'matrix-order') : { skill: 'echo' }
    const withContext = context ? { contextId: context } : {}
    // Everyone may order; with a task id, a follow-up reads the task like GetTask.
    const calls: Call[] = [
      {
        params: wireMessage(skillOrder, withContext),
        restPath: '/message:send',
        body: wireMessage(skillOrder, withContext),
      },
    ]
    if (principal !== 'anonymous')
      calls.push({
        params: wireMessage({}, { taskId: task, ...withContext }),
        restPath: '/message:send',
        body: wireMessage({}, { taskId: task, ...withContext }),
      })
    const visible = principal === 'anonymous' ? [] : readableById(kind, taskName)
    return { calls, ok: principal === 'anonymous' || visible.length > 0, visible, thread: context !== '' }
  },
  sendMessageStream: ({ context }) => ({
    ...REFUSED,
    calls: [
      {
        params: wireMessage({ skill: 'echo' }, { contextId: context }),
        restPath: '/message:stream',
        body: wireMessage({ skill: 'echo' }, { contextId: context }),
      },
    ],
  }),
  getTask: ({ task, taskName, kind }) => {
    const visible = readableById(kind, taskName)
    return {
      calls: [{ params: { id: task }, restPath: `/tasks/${task}` }],
      ok: visible.length > 0,
      visible,
      thread: false,
    }
  },
  cancelTask: ({ task }) => ({
    ...REFUSED,
    calls: [{ params: { id: task }, restPath: `/tasks/${task}:cancel` }],
  }),
  createTaskPushNotificationConfig: ({ task }) => ({
    ...REFUSED,
    calls: [
      {
        params: { taskId: task, id: 'c1', url: 'https://hooks.example/a2a' },
        restPath: `/tasks/${task}/pushNotificationConfigs`,
        body: { taskId: task, id: 'c1', url: 'https://hooks.example/a2a' },
      },
    ],
  }),
  getTaskPushNotificationConfig: ({ task }) => ({
    ...REFUSED,
    calls: [{ params: { taskId: task, id: 'c1' }, restPath: `/tasks/${task}/pushNotificationConfigs/c1` }],
  }),
  listTaskPushNotificationConfigs: ({ task }) => ({
    ...REFUSED,
    calls: [{ params: { taskId: task }, restPath: `/tasks/${task}/pushNotificationConfigs` }],
  }),
  deleteTaskPushNotificationConfig: ({ task }) => ({
    ...REFUSED,
    calls: [{ params: { taskId: task, id: 'c1' }, restPath: `/tasks/${task}/pushNotificationConfigs/c1` }],
  }),
  resubscribe: ({ task }) => ({
    ...REFUSED,
    calls: [{ params: { id: task }, restPath: `/tasks/${task}:subscribe` }],
  }),
  listTasks: ({ task, context, taskName, kind, principal }) => {
    // The buyer lists its conversation, or the task id it was shown as contextId; a seller its queue (its key).
    const contextId = context || (principal === 'buyerTask' ? task : '')
    const query = new URLSearchParams({
      pageSize: '100',
      includeArtifacts: 'true',
      ...(contextId ? { contextId } : {}),
    })
    const calls = [
      { params: { contextId, pageSize: 100, includeArtifacts: true }, restPath: `/tasks?${query}` },
    ]
    const queue = principal === 'seller' && kind === 'agent' ? READABLE.agent : []
    const visible =
      principal === 'buyerContext'
        ? CONVERSATION[kind]
        : principal === 'buyerTask'
          ? readableById(kind, taskName)
          : queue
    return { calls, ok: visible.length > 0, visible, thread: context !== '' }
  },
}

/** An answer of the matrix, and whether it came over JSON-RPC (errors are HTTP 200 there). */
type Answer = { status: number; text: string; json: WireTask; rpc: boolean }

/** Whether an answer is a success: a JSON-RPC result, or an HTTP 2xx. */
const succeeded = (answer: Answer) =>
  answer.rpc ? answer.status === 200 && answer.json?.result !== undefined : answer.status < 300

/** The method names of the SDK's `A2ARequestHandler`, read from its type declarations. */
function sdkHandlerMethods(): string[] {
  const server = fileURLToPath(import.meta.resolve('@a2a-js/sdk/server'))
  const dist = join(dirname(server), '..')
  const glob = new Bun.Glob('a2a_request_handler-*.d.ts')
  const names = new Set<string>()
  for (const file of glob.scanSync(dist)) {
    const source = ts.createSourceFile(file, readFileSync(join(dist, file), 'utf8'), ts.ScriptTarget.Latest)
    source.forEachChild((node) => {
      if (ts.isInterfaceDeclaration(node) && node.name.text === 'A2ARequestHandler')
        for (const member of node.members)
          if (member.name && ts.isIdentifier(member.name)) names.add(member.name.text)
    })
  }
  return [...names].sort()
}

describe('A2A access matrix (the A2A table x bindings x interfaces x principals)', () => {
  test('behavior: the table holds every operation of the SDK’s request handler, and the matrix every operation of the table', () => {
    const sdk = sdkHandlerMethods()
    expect(sdk.length).toBeGreaterThan(10)
    expect([...A2A_METHOD_NAMES].sort() as string[]).toEqual(sdk)
    expect(Object.keys(MATRIX).sort()).toEqual([...A2A_METHOD_NAMES].sort())
  })

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
    for (const kind of ['market', 'agent'] as const)
      test(`attack (${binding}, ${kind === 'market' ? 'the marketplace’s interface' : 'an agent’s interface'}): each principal reads only what it may, sees a conversation’s id only when it presented it, and spends the operation’s rate class`, async () => {
        const app = await market()
        const { tasks, threads } = await conversations(app)
        const buyersThreads = Object.values(threads)
        let requests = 0
        const buyersOrders: WireTask[] = []
        for (const method of A2A_METHOD_NAMES) {
          const row = A2A_METHODS[method]
          for (const principal of PRINCIPALS) {
            const holding = holds(principal, kind, app)
            const taskName = holding.task ?? null
            const cell = MATRIX[method]({
              task: taskName ? tasks[taskName] : MADE_UP_TASK,
              taskName,
              context: holding.context ? threads[kind] : '',
              kind,
              principal,
            })
            const headers = {
              ...A2A_HEADERS,
              ...(holding.key ? { authorization: `Bearer ${holding.key}` } : {}),
            }
            const answers: Answer[] = []
            app.spent.length = 0
            if (row.jsonRpc === null)
              answers.push({ ...(await app.call('GET', CARD[kind], { headers })), rpc: false })
            for (const call of cell.calls) {
              if (binding === 'JSONRPC') {
                expect(a2aJsonRpcMethod({ method: row.jsonRpc })).toBe(method)
                answers.push({
                  ...(await rpc(app, INTERFACE[kind], row.jsonRpc ?? '', call.params, headers)),
                  rpc: true,
                })
              } else {
                const route = row.rest
                if (!route) throw new Error(`${method} has no HTTP+JSON route`)
                expect(a2aRestMethod(route.method, call.restPath.split('?')[0] ?? ''), call.restPath).toBe(
                  method,
                )
                const path = `${INTERFACE[kind]}/rest${call.restPath}`
                answers.push({
                  ...(await app.call(route.method, path, { headers, body: call.body })),
                  rpc: false,
                })
              }
            }
            const label = `${method} as ${principal}`
            expect(answers.length, label).toBeGreaterThan(0)
            requests += answers.length
            const last = answers[answers.length - 1]
            if (last) expect(succeeded(last), `${label}: ${last.text.slice(0, 300)}`).toBe(cell.ok)
            for (const answer of answers)
              expect(answer.status, `${label}: ${answer.text.slice(0, 300)}`).toBeLessThan(500)
            // What the answers show of the buyer's tasks (ids, params); a refusal may name only the id it was sent.
            const shown = answers.filter((answer) => succeeded(answer)).map((answer) => answer.text)
            expect(visibleIn(shown.join('\n'), tasks).sort(), label).toEqual([...cell.visible].sort())
            for (const answer of answers.filter((answer) => !succeeded(answer)))
              expect(
                visibleIn(answer.text, tasks).filter((name) => name !== taskName),
                label,
              ).toEqual([])
            const text = answers.map((answer) => answer.text).join('\n')
            const shownThreads = buyersThreads.filter((thread) => text.includes(thread))
            expect(shownThreads, label).toEqual(cell.thread ? [threads[kind]] : [])
            if (principal === 'buyerContext' && method === 'sendMessage') buyersOrders.push(answers[0]?.json)
            expect([...new Set(app.spent.map((one) => one.bucket))], `${label}: rate class`).toEqual([
              row.rate,
            ])
          }
        }
        expect(requests).toBeGreaterThanOrEqual(A2A_METHOD_NAMES.length * PRINCIPALS.length)
        // Nobody but the buyer joined the buyer's conversation: it holds the buyer's orders and the buyer's own
        // matrix orders, no one else's.
        const listed = await rpc(app, INTERFACE[kind], 'ListTasks', {
          contextId: threads[kind],
          pageSize: 100,
        })
        const ids = listed.json.result.tasks.map((task: { id: string }) => task.id) as string[]
        const ordered = buyersOrders.map((answer) => answer?.result?.task?.id ?? answer?.task?.id)
        expect(ordered.length).toBe(1)
        expect(ids.sort()).toEqual([...CONVERSATION[kind].map((name) => tasks[name]), ...ordered].sort())
      })
})
