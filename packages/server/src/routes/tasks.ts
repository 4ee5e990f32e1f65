import {
  answerHeaders,
  bearerKey,
  CompleteTaskInput,
  CreateTaskInput,
  PaidOrderInput,
  type TaskAnswer,
  TaskListInput,
  VerifyPaymentInput,
} from '@agentmarket/core'
import { Elysia } from 'elysia'
import { operation } from '../openapi/operation.ts'
import { queryOf, type RouteDeps } from './deps.ts'
import type { Reply } from './etag.ts'

/** True when the Authorization header carries an MPP credential (`Payment …`). */
const isPaymentCredential = (header: string | undefined) => /^Payment\s/i.test(header ?? '')

/** The `skill` of an order body, for row 8 with a credential (the skill is then a slug). */
const skillOf = (body: unknown) =>
  typeof body === 'object' && body !== null && typeof (body as { skill?: unknown }).skill === 'string'
    ? (body as { skill: string }).skill
    : ''

/** Sends a core answer: its status, `Retry-After` when it has one, and whether it is a replay. */
function send(answer: TaskAnswer, set: Reply) {
  set.status = answer.status
  Object.assign(set.headers, answerHeaders(answer))
  return answer.body
}

/** Orders, payment verification, delivery and task lists: SPEC rows 8-11 and the seller's delivery. */
export function taskRoutes({ market, clientOf }: RouteDeps) {
  return new Elysia()
    .post(
      '/agents/:name/tasks',
      async ({ params, headers, body, set, request, server }) =>
        isPaymentCredential(headers.authorization)
          ? market.orderWithPayment(params.name, skillOf(body), body ?? {}, request)
          : send(
              await market.createTask(params.name, body ?? {}, {
                idempotencyKey: headers['idempotency-key'] ?? null,
                client: clientOf(request, server),
              }),
              set,
            ),
      operation({
        id: 'createTask',
        rate: 'payment',
        summary: 'Order a skill; with tx_hash the payment is verified at once',
        tag: 'Tasks',
        body: CreateTaskInput,
        ok: { status: 201, response: 'Task', description: 'Created (pending_payment, or paid)' },
        alsoOk: [
          {
            status: 202,
            response: 'TaskAwaitingConfirmations',
            description:
              'Created; the payment in tx_hash is not final yet and is re-checked in the background',
            retryAfter: true,
          },
        ],
        problems: [400, 404, 409, 413, 415, 422, 503],
        headers: [
          {
            name: 'Idempotency-Key',
            description: 'A retry with the same key and body gets the first answer again',
            required: false,
          },
        ],
      }),
    )
    .get(
      '/agents/:name/tasks',
      ({ params, headers, request }) =>
        market.listTasks(params.name, bearerKey(headers.authorization), queryOf(request)),
      operation({
        id: 'listTasks',
        summary: "Public history (default completed); with the seller's key, its work queue (paid first)",
        tag: 'Tasks',
        query: TaskListInput,
        ok: { status: 200, response: 'TaskList', description: 'A page of tasks' },
        problems: [400, 401, 403, 404],
      }),
    )
    .post(
      // The segment is the skill's slug; it shares the `id` name with GET …/tasks/{id} because routers and OpenAPI
      // both need one parameter name per path position.
      '/agents/:name/tasks/:id',
      ({ params, body, request }) => market.orderWithPayment(params.name, params.id, body ?? {}, request),
      operation({
        id: 'orderWithPayment',
        rate: 'payment',
        summary:
          'Order a skill by its slug (the {id} segment), paid by machine payment: HTTP 402, MPP tempo charge',
        tag: 'Tasks',
        body: PaidOrderInput,
        bodyOptional: true,
        ok: {
          status: 201,
          response: 'Task',
          description: 'Paid; the Payment-Receipt header holds the receipt',
        },
        alsoOk: [
          {
            status: 200,
            response: 'Task',
            description:
              'A retry of the same credential (same challenge and body; its transfer names that challenge): the task it paid for',
          },
        ],
        problems: [400, 402, 404, 409, 413, 415, 503],
        headers: [
          {
            name: 'Authorization',
            description: 'Payment <credential>, made by an MPP client from the 402 challenge',
            required: false,
          },
        ],
      }),
    )
    .get(
      '/agents/:name/tasks/:id',
      ({ params }) => market.getTask(params.name, params.id),
      operation({
        id: 'getTask',
        summary: 'A task, by its id; poll until status is completed',
        tag: 'Tasks',
        ok: { status: 200, response: 'Task', description: 'The task' },
        problems: [404],
      }),
    )
    .post(
      '/agents/:name/tasks/:id/verify-payment',
      async ({ params, body, set }) =>
        send(await market.verifyPayment(params.name, params.id, body ?? {}), set),
      operation({
        id: 'verifyPayment',
        rate: 'payment',
        summary: 'Verify the on-chain USDC payment of a task, signed for it by the paying wallet',
        tag: 'Tasks',
        body: VerifyPaymentInput,
        ok: { status: 200, response: 'PaymentVerified', description: 'Paid' },
        alsoOk: [
          {
            status: 202,
            response: 'PaymentPending',
            description: 'Not mined yet, or too few confirmations; nothing changed',
            retryAfter: true,
          },
        ],
        problems: [400, 404, 409, 413, 415, 422, 503],
      }),
    )
    .post(
      '/agents/:name/tasks/:id/complete',
      ({ params, headers, body }) =>
        market.completeTask(params.name, params.id, bearerKey(headers.authorization), body ?? {}),
      operation({
        id: 'completeTask',
        summary: 'Deliver a paid task (seller): paid -> completed with result_url',
        tag: 'Tasks',
        auth: 'bearer',
        body: CompleteTaskInput,
        ok: { status: 200, response: 'SellerTask', description: 'Completed' },
        problems: [400, 401, 403, 404, 409, 413, 415],
      }),
    )
}
