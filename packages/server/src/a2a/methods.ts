import type { A2ARequestHandler } from '@a2a-js/sdk/server'
import type { RateClass } from '@agentmarket/core/routes'

/**
 * Who an A2A operation answers with data: anyone (`anonymous`), the seller by its API key on its own agent's
 * interface (`sellerKey`), whoever presents a task's id (`taskId`), whoever presents a conversation's contextId
 * (`contextId`). An operation with none refuses everyone (the cards say it is not offered).
 */
export type A2aCaller = 'anonymous' | 'sellerKey' | 'taskId' | 'contextId'

/** An HTTP+JSON route of an operation: its method and the path after the interface's `…/rest` URL. */
export type A2aRestRoute = { method: 'GET' | 'POST' | 'DELETE'; path: RegExp }

/** One A2A operation: its JSON-RPC method, its HTTP+JSON route, the rate bucket it spends and who it answers. */
export type A2aMethodRow = {
  /** The JSON-RPC method name (null: not a JSON-RPC method; the card is read at its well-known URL). */
  jsonRpc: string | null
  /** The HTTP+JSON route (null: none). */
  rest: A2aRestRoute | null
  /** The rate class each request spends, whatever binding carries it. */
  rate: RateClass
  /**
   * How many tokens of `rate` a request spends, from its params (the JSON-RPC params or the HTTP+JSON query); absent:
   * one. An operation whose work grows with what it asks is charged by the most it may do.
   */
  tokens?: (params: Record<string, unknown>) => number
  /** Who is answered with data (empty: refused for everyone). */
  callers: readonly A2aCaller[]
  /** What it does here, and what an answer may show. */
  summary: string
}

/**
 * Every operation of the SDK's request handler (`A2ARequestHandler`; the mapped type makes a missing one a compile
 * error, and tests/security/a2aContexts.test.ts checks the SDK's declaration too), with its rate class and who may
 * call it. The rate limits (`a2aRateClass`) and the HTTP+JSON dispatch (`transports.ts`) read it; the access test
 * makes a real request per operation, binding, interface kind and principal.
 *
 * The rule for conversations: a contextId is the capability of the party that opened the conversation, so an
 * answer shows a conversation's id only to a request that presented it; an answer to a request that presents only
 * a task id (which the seller knows too) shows the task id as contextId.
 */
export const A2A_METHODS: { readonly [Method in keyof A2ARequestHandler]: A2aMethodRow } = {
  getAgentCard: {
    jsonRpc: null,
    rest: null,
    rate: 'read',
    callers: ['anonymous'],
    summary: 'The public card, at the interface’s well-known URL.',
  },
  getAuthenticatedExtendedAgentCard: {
    jsonRpc: 'GetExtendedAgentCard',
    rest: { method: 'GET', path: /^\/extendedAgentCard$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no extended card.',
  },
  sendMessage: {
    jsonRpc: 'SendMessage',
    rest: { method: 'POST', path: /^\/message:send$/ },
    rate: 'payment',
    callers: ['anonymous', 'taskId', 'contextId'],
    summary:
      'Anyone orders (a new conversation, or the one whose contextId it presents); with a taskId it pays or reads that task, whose contextId is shown only when the message presents it.',
  },
  sendMessageStream: {
    jsonRpc: 'SendStreamingMessage',
    rest: { method: 'POST', path: /^\/message:stream$/ },
    rate: 'payment',
    callers: [],
    summary: 'Refused: no streaming.',
  },
  getTask: {
    jsonRpc: 'GetTask',
    rest: { method: 'GET', path: /^\/tasks\/[^/:]+$/ },
    rate: 'read',
    callers: ['taskId'],
    summary: 'The task whose id is presented, with the task id as contextId.',
  },
  cancelTask: {
    jsonRpc: 'CancelTask',
    rest: { method: 'POST', path: /^\/tasks\/[^/]+:cancel$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: orders are not cancelled.',
  },
  createTaskPushNotificationConfig: {
    jsonRpc: 'CreateTaskPushNotificationConfig',
    rest: { method: 'POST', path: /^\/tasks\/[^/]+\/pushNotificationConfigs$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no push notifications.',
  },
  getTaskPushNotificationConfig: {
    jsonRpc: 'GetTaskPushNotificationConfig',
    rest: { method: 'GET', path: /^\/tasks\/[^/]+\/pushNotificationConfigs\/[^/]+$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no push notifications.',
  },
  listTaskPushNotificationConfigs: {
    jsonRpc: 'ListTaskPushNotificationConfigs',
    rest: { method: 'GET', path: /^\/tasks\/[^/]+\/pushNotificationConfigs$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no push notifications.',
  },
  deleteTaskPushNotificationConfig: {
    jsonRpc: 'DeleteTaskPushNotificationConfig',
    rest: { method: 'DELETE', path: /^\/tasks\/[^/]+\/pushNotificationConfigs\/[^/]+$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no push notifications.',
  },
  resubscribe: {
    jsonRpc: 'SubscribeToTask',
    rest: { method: 'POST', path: /^\/tasks\/[^/]+:subscribe$/ },
    rate: 'read',
    callers: [],
    summary: 'Refused: no streaming.',
  },
  listTasks: {
    jsonRpc: 'ListTasks',
    rest: { method: 'GET', path: /^\/tasks$/ },
    rate: 'read',
    // A read per task the answer may hold: a page is read and built page first (handler.ts), but a state filter reads
    // every task looked at (up to a page's maximum) to find the matches.
    tokens: (params) => (isStateFilter(params.status) ? A2A_PAGE_MAX : a2aPageSize(params.pageSize)),
    callers: ['sellerKey', 'taskId', 'contextId'],
    summary:
      'The conversation whose contextId is presented (a task id lists that task alone); with no contextId, on an agent’s interface and with its key, the seller’s queue, each task under its own id as contextId.',
  },
}

/** The most tasks one ListTasks answer holds (A2A's bound of pageSize). */
export const A2A_PAGE_MAX = 100
/** The page size ListTasks answers for a requested `pageSize` (A2A's default 50, within 1-100). */
export function a2aPageSize(requested: unknown): number {
  const size = requested === undefined || requested === '' ? Number.NaN : Math.trunc(Number(requested))
  return Number.isFinite(size) ? Math.min(Math.max(size, 1), A2A_PAGE_MAX) : 50
}

/** True when ListTasks's `status` names a state (A2A's JSON enum name, or its number), not the unspecified one. */
function isStateFilter(status: unknown): boolean {
  return status !== undefined && status !== '' && status !== 0 && status !== 'TASK_STATE_UNSPECIFIED'
}

/** An operation of the handler. */
export type A2aMethod = keyof A2ARequestHandler

/** The operations, in the table's order. */
export const A2A_METHOD_NAMES = Object.keys(A2A_METHODS) as A2aMethod[]

/** The operation a JSON-RPC request names, or null for a method not in the table. */
export function a2aJsonRpcMethod(body: unknown): A2aMethod | null {
  const name = ((body ?? {}) as { method?: unknown }).method
  return A2A_METHOD_NAMES.find((method) => A2A_METHODS[method].jsonRpc === name) ?? null
}

/** The operation an HTTP+JSON request reaches (`path` after the interface's `…/rest`), or null. */
export function a2aRestMethod(httpMethod: string, path: string): A2aMethod | null {
  return (
    A2A_METHOD_NAMES.find((method) => {
      const route = A2A_METHODS[method].rest
      return route !== null && route.method === httpMethod && route.path.test(path)
    }) ?? null
  )
}
