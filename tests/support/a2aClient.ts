import { type Message, type Part, Role, type Task } from '@a2a-js/sdk'
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client'
import type { testApp } from '../../packages/server/src/testing/http.ts'

// The two ways a test talks A2A to an in-process app (testApp): the official SDK client, as a user's agent would,
// and plain JSON-RPC calls through testApp's `call`, where a test needs the wire JSON itself.

type TestApp = Awaited<ReturnType<typeof testApp>>

/** The A2A bindings the SDK client speaks and the app serves. */
export type A2aBinding = 'JSONRPC' | 'HTTP+JSON'

/** A fetch that hands each request to `app` (testApp's), with `headers` set on it. */
export function appFetch(app: Pick<TestApp, 'app'>, headers: Record<string, string> = {}): typeof fetch {
  return ((input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init)
    for (const [name, value] of Object.entries(headers)) request.headers.set(name, value)
    return app.app.handle(request)
  }) as typeof fetch
}

/** The official A2A client of the card at `url` over `binding`, sending every request through `fetchImpl`. */
export function sdkClientVia(fetchImpl: typeof fetch, binding: A2aBinding, url: string): Promise<Client> {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      preferredTransports: [binding],
    }),
  ).createFromUrl(url)
}

/** The official A2A client of the card at `url` over `binding`: `app` handles its requests, `headers` set on each. */
export const sdkClient = (
  app: Pick<TestApp, 'app'>,
  binding: A2aBinding,
  url: string,
  headers: Record<string, string> = {},
): Promise<Client> => sdkClientVia(appFetch(app, headers), binding, url)

const dataPart = (data: unknown): Part => ({
  content: { $case: 'data', value: data },
  metadata: undefined,
  filename: '',
  mediaType: 'application/json',
})

/** A user message for the SDK client: one data part, a fresh messageId, and whatever `extra` sets (task, context). */
export const sdkMessage = (data: unknown, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [dataPart(data)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
  ...extra,
})

/** Sends `message` with the SDK client and expects a task back (throws on any other answer). */
export async function sendForTask(client: Client, message: Message): Promise<Task> {
  const answer = await client.sendMessage({
    tenant: '',
    message,
    configuration: undefined,
    metadata: undefined,
  })
  if (!('id' in answer) || !('status' in answer))
    throw new Error(`expected a task, got ${JSON.stringify(answer)}`)
  return answer as Task
}

/** The header of A2A 1.0 every plain call sends. */
export const A2A_HEADERS = { 'a2a-version': '1.0' }

/** One JSON-RPC call of A2A at `path` (the answer as testApp's `call` gives it). */
export const rpc = (
  app: Pick<TestApp, 'call'>,
  path: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
) =>
  app.call('POST', path, {
    body: { jsonrpc: '2.0', id: 1, method, params },
    headers: { ...A2A_HEADERS, ...headers },
  })

/** SendMessage's params as wire JSON: a user message with one data part, and maybe its task, context and metadata. */
export const wireMessage = (data: unknown, extra: Record<string, unknown> = {}) => ({
  message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ data }], ...extra },
})

/** A task as A2A's wire JSON has it. */
// biome-ignore lint/suspicious/noExplicitAny: A2A's wire JSON, asserted field by field
export type WireTask = any

/** Orders over JSON-RPC at `path` and expects a task back (throws on any other answer). */
export async function order(
  app: Pick<TestApp, 'call'>,
  path: string,
  data: unknown,
  extra: Record<string, unknown> = {},
): Promise<WireTask> {
  const answer = await rpc(app, path, 'SendMessage', wireMessage(data, extra))
  const task = answer.json?.result?.task
  if (!task) throw new Error(`expected a task, got ${answer.status} ${answer.text}`)
  return task
}
