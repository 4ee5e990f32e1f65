import {
  A2A_CONTENT_TYPE,
  A2A_VERSION_HEADER,
  type AgentCard,
  Extensions,
  type ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  taskStateFromJSON,
} from '@a2a-js/sdk'
import {
  RequestMalformedError,
  restStatusFor,
  TaskNotFoundError,
  toJsonRpcError,
  toRestErrorBody,
} from '@a2a-js/sdk/errors'
import {
  type A2ARequestHandler,
  defaultServerCallContextBuilder,
  JsonRpcTransportHandler,
  type ServerCallContext,
  UnauthenticatedUser,
  validateVersion,
} from '@a2a-js/sdk/server'
import { A2aUnavailableError } from './handler.ts'
import { type A2aMethod, a2aRestMethod } from './methods.ts'

/** The SDK's call context of a request: its extensions, headers and A2A version (checked against the card). */
function callContext(request: Request, card: AgentCard, binding: 'JSONRPC' | 'HTTP+JSON'): ServerCallContext {
  const context = defaultServerCallContextBuilder({
    extensions: Extensions.parseServiceParameter(request.headers.get('a2a-extensions') ?? undefined),
    user: new UnauthenticatedUser(),
    headers: Object.fromEntries(request.headers),
    requestedVersion: request.headers.get(A2A_VERSION_HEADER) ?? undefined,
  })
  validateVersion(context.requestedVersion ?? '0.3', card, binding)
  return context
}

/**
 * A2A's JSON-RPC binding: the SDK's JsonRpcTransportHandler over `handler` (errors are HTTP 200 with a JSON-RPC
 * error, as the binding says). Streaming methods are refused by the handler, so every answer is one JSON body.
 */
export async function jsonRpcAnswer(
  request: Request,
  body: unknown,
  card: AgentCard,
  handler: A2ARequestHandler,
): Promise<Response> {
  const id = typeof body === 'object' && body !== null ? ((body as { id?: unknown }).id ?? null) : null
  let context: ServerCallContext
  try {
    context = callContext(request, card, 'JSONRPC')
  } catch (error) {
    return Response.json({ jsonrpc: '2.0', id, error: toJsonRpcError(error) })
  }
  const call = (body ?? {}) as Record<string, unknown>
  const answer = await new JsonRpcTransportHandler(handler).handle(call, context)
  if (answer && typeof (answer as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
    await (answer as AsyncGenerator).return?.(undefined)
    return Response.json({
      jsonrpc: '2.0',
      id,
      error: toJsonRpcError(new RequestMalformedError('Streaming is not offered.')),
    })
  }
  return Response.json(answer)
}

const restJson = (body: unknown, status = 200) =>
  Response.json(body, { status, headers: { 'content-type': A2A_CONTENT_TYPE } })

const restError = (error: unknown) => {
  if (error instanceof A2aUnavailableError)
    return Response.json(
      { error: { code: 503, status: 'UNAVAILABLE', message: error.message, details: [] } },
      {
        status: 503,
        headers: { 'content-type': A2A_CONTENT_TYPE, 'retry-after': String(error.retryAfterSeconds) },
      },
    )
  const status = restStatusFor(error)
  return restJson(toRestErrorBody(error, status), status)
}

/** A task id from the path, percent-decoded; malformed encoding names no task (a client error, not a fault). */
function decodedId(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new TaskNotFoundError(`No task "${segment}": the path's percent-encoding is malformed.`)
  }
}

/** A number of a query, or undefined. */
const queryNumber = (query: URLSearchParams, name: string) => {
  const value = query.get(name)
  return value === null ? undefined : Number(value)
}

/** The task id of an HTTP+JSON path `/tasks/{id}…` (percent-decoded), or '' when the path names none. */
const pathTaskId = (path: string) => {
  const segment = /^\/tasks\/([^/:]+)/.exec(path)?.[1]
  return segment ? decodedId(segment) : ''
}

/** The request of ListTasks from the query of `GET /tasks`. */
function listTasksRequest(query: URLSearchParams): ListTasksRequest {
  const status = query.get('status')
  return {
    tenant: '',
    contextId: query.get('contextId') ?? '',
    status: status ? taskStateFromJSON(status) : TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: queryNumber(query, 'pageSize'),
    pageToken: query.get('pageToken') ?? '',
    historyLength: queryNumber(query, 'historyLength'),
    statusTimestampAfter: undefined,
    includeArtifacts: query.get('includeArtifacts') === 'true',
  }
}

/** Runs one operation of the A2A table over `handler` and answers its HTTP+JSON body. */
async function restOperation(
  method: A2aMethod,
  request: Request,
  body: unknown,
  path: string,
  handler: A2ARequestHandler,
  context: ServerCallContext,
): Promise<unknown> {
  const query = new URL(request.url).searchParams
  const id = pathTaskId(path)
  switch (method) {
    case 'sendMessage': {
      const result = await handler.sendMessage(SendMessageRequest.fromJSON(body ?? {}), context)
      const payload =
        'messageId' in result
          ? { $case: 'message' as const, value: result }
          : { $case: 'task' as const, value: result }
      return SendMessageResponse.toJSON({ payload })
    }
    case 'getTask':
      return Task.toJSON(
        await handler.getTask(
          { tenant: '', id, historyLength: queryNumber(query, 'historyLength') },
          context,
        ),
      )
    case 'listTasks':
      return ListTasksResponse.toJSON(await handler.listTasks(listTasksRequest(query), context))
    case 'cancelTask':
      return Task.toJSON(await handler.cancelTask({ tenant: '', id, metadata: undefined }, context))
    case 'sendMessageStream':
      return (await handler.sendMessageStream(SendMessageRequest.fromJSON(body ?? {}), context).next()).value
    case 'resubscribe':
      return (await handler.resubscribe({ tenant: '', id }, context).next()).value
    case 'getAuthenticatedExtendedAgentCard':
      return handler.getAuthenticatedExtendedAgentCard({ tenant: '' }, context)
    case 'createTaskPushNotificationConfig':
      return handler.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON(body ?? {}),
        context,
      )
    case 'getTaskPushNotificationConfig':
      return handler.getTaskPushNotificationConfig({ tenant: '', taskId: id, id: '' }, context)
    case 'listTaskPushNotificationConfigs':
      return handler.listTaskPushNotificationConfigs(
        { tenant: '', taskId: id, pageSize: 0, pageToken: '' },
        context,
      )
    case 'deleteTaskPushNotificationConfig':
      return handler.deleteTaskPushNotificationConfig({ tenant: '', taskId: id, id: '' }, context)
    case 'getAgentCard':
      return handler.getAgentCard()
  }
}

/**
 * A2A's HTTP+JSON binding (the SDK exports no REST handler, so its routes are dispatched here, with the SDK's
 * converters and error bodies; `body` is the parsed JSON body): each route of the A2A table (`methods.ts`) reaches
 * its handler operation, which answers or refuses it. `path` is the part after the interface's URL.
 */
export async function restAnswer(
  request: Request,
  body: unknown,
  path: string,
  card: AgentCard,
  handler: A2ARequestHandler,
): Promise<Response> {
  try {
    const context = callContext(request, card, 'HTTP+JSON')
    const method = a2aRestMethod(request.method, path)
    if (method === null) throw new RequestMalformedError(`No A2A operation at ${request.method} ${path}.`)
    return restJson(await restOperation(method, request, body, path, handler, context))
  } catch (error) {
    return restError(error)
  }
}
