import type { Hex } from 'viem'
import { hashSecret } from '../../Credentials.ts'
import { ChainUnavailableError, ConflictError, idempotencyKeyReused } from '../../errors.ts'
import { recheckDelayMs } from '../../PaymentRechecks.ts'
import type { AgentStore, KvStore, TaskStore } from '../../ports/Store.ts'
import { clientKeyOf } from '../../RateLimit.ts'
import { type IdempotentAnswer, skillKey, type TaskRecord } from '../../Task.ts'
import { CreateTaskInput } from '../../TaskInput.ts'
import { toTaskView } from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, requireAgent } from '../context.ts'
import { parseIdempotencyKey } from '../idempotency.ts'
import { eventsOfNewTask, newTaskOfSkill, newTaskRecord } from '../newTask.ts'
import { type TaskAnswer, taskAnswer } from './answers.ts'
import { insertOrder, orderGuard } from './budgetGuard.ts'
import { checkOf, judge, payerProved, paymentOf, pendingVerification } from './judging.ts'
import { withinRecheckBudget } from './rechecks.ts'
import { CLAIM_CONFLICTS, refusal, signatureInvalid, signatureRequired } from './refusals.ts'

/** Who orders: the host's name for the client (its address), which scopes Idempotency-Keys and re-check budgets. */
export type OrderOptions = {
  idempotencyKey?: string | null
  client?: string | null
  /** The API key of the agent the order names as `buyer` (needed when that buyer has a spending budget). */
  buyerKey?: string | undefined
}

/** The stored first answer to a request with the same key, if the body is the same; 409 otherwise. */
function replay(answer: IdempotentAnswer, fingerprint: string): TaskAnswer {
  if (answer.fingerprint !== fingerprint) {
    throw idempotencyKeyReused()
  }
  return { outcome: 'replayed', status: answer.status, body: answer.body, replayed: true }
}

/**
 * Applies a tx hash sent with the order: paid at once, pending (re-checked in the background within the client's
 * budget), a replay of the same order still pending, or refused. The payer proves with `signature` that it pays
 * this order.
 */
async function payAtCreation(
  context: ActionContext<TaskStore & KvStore>,
  task: TaskRecord,
  txHash: Hex,
  signature: Hex,
): Promise<TaskAnswer> {
  const { store, config, clock } = context
  const usedBy = await store.findTaskIdByTxHash(txHash)
  if (usedBy) throw await alreadyUsed(context, task, usedBy, txHash, signature)
  const [verdict] = await judge(context, [checkOf(context, task, txHash)])
  if (!verdict) throw new ChainUnavailableError()
  if (verdict.ok) {
    if (!(await payerProved(context, task, txHash, signature, verdict.from, true)))
      throw signatureInvalid(verdict.from)
    task.status = 'paid'
    task.payment = paymentOf(context, verdict, txHash)
    return taskAnswer('created', { body: toTaskView(task, config) })
  }
  if (verdict.reason !== 'pending') throw refusal(verdict.reason)
  const earlier = await earlierPendingOrder(context, task.agentName, txHash, signature)
  if (earlier) return earlier
  const rechecked = await withinRecheckBudget(context, task.clientKey)
  if (rechecked)
    task.pendingCheck = {
      txHash,
      signature,
      attempts: 0,
      nextAt: new Date(clock.now().getTime() + recheckDelayMs(0)),
    }
  const { verification, retryAfterSeconds } = pendingVerification(verdict)
  const body = { ...toTaskView(task, config), verification: { ...verification, rechecked } }
  return taskAnswer('awaiting_confirmations', { body, retryAfterSeconds })
}

/**
 * The 409 of a hash that already paid a task. When it paid a task of this seller and the signature proves that task's
 * payer sent this order too, the order was placed before and its answer lost: the 409 names that task, so the buyer
 * reads it instead of paying again.
 */
async function alreadyUsed(
  context: ActionContext<TaskStore>,
  task: TaskRecord,
  usedBy: string,
  txHash: Hex,
  signature: Hex,
): Promise<ConflictError> {
  const first = await context.store.getTask(task.agentName, usedBy)
  const from = first?.payment?.from
  const proved =
    first && from
      ? await payerProved(context, first, txHash, signature, from, true).catch(() => false)
      : false
  if (!first || !proved) return CLAIM_CONFLICTS.tx_already_used()
  return new ConflictError(
    'tx_already_used',
    `This transaction already paid task ${first.id}, and your payer_signature shows you ordered it: your earlier order went through. Do not pay again; read it at /api/agents/${encodeURIComponent(first.agentName)}/tasks/${first.id}.`,
  )
}

/**
 * The kv key of the first 202 answer to an order sent with a hash not final yet. It only answers a retry while its task
 * still waits on that hash (earlierPendingOrder), so the re-check that ends the wait removes it (rechecks.ts).
 */
export const pendingOrderKey = (txHash: Hex) => `order:pending-tx:${txHash.toLowerCase()}`

/** The first 202 answer to an order paid by a hash not final yet, kept for its retries. */
type PendingOrder = { agentName: string; taskId: string; signature: Hex | null; body: unknown }

/**
 * The first answer to an order that sent this hash with the same payer signature while the hash was not final, when
 * that task still waits on it and the hash is still not final: a retry without its Idempotency-Key (its answer lost)
 * gets that task again instead of a second one that the payment can never pay. (Once final, a retry is judged anew.)
 */
async function earlierPendingOrder(
  context: ActionContext<TaskStore & KvStore>,
  agentName: string,
  txHash: Hex,
  signature: Hex,
): Promise<TaskAnswer | null> {
  const earlier = (await context.store.kvGet(pendingOrderKey(txHash))) as PendingOrder | null
  if (
    !earlier ||
    earlier.agentName !== agentName ||
    earlier.signature?.toLowerCase() !== signature.toLowerCase()
  )
    return null
  const task = await context.store.getTask(agentName, earlier.taskId)
  if (task?.status !== 'pending_payment' || task.pendingCheck?.txHash.toLowerCase() !== txHash.toLowerCase())
    return null
  return { outcome: 'replayed', status: 202, body: earlier.body, replayed: true }
}

/** The `createTask` action (SPEC row 8). */
export function createTaskAction(context: ActionContext<AgentStore & TaskStore & KvStore>) {
  const { store, config, feed } = context
  /**
   * Orders a skill (SPEC row 8). A free skill's task starts `paid`; with `tx_hash` the payment is verified at
   * once. With an Idempotency-Key, a retry with the same body gets the first answer again.
   * @example const { outcome, body } = await market.createTask('scout', { skill: 'search' })
   */
  return async function createTask(
    agentName: string,
    body: unknown,
    options: OrderOptions = {},
  ): Promise<TaskAnswer> {
    const input = parseInput(CreateTaskInput, body)
    const key = options.idempotencyKey ?? null
    if (key !== null) parseIdempotencyKey(key)
    // The skill named by its slug is read with what the order needs of its seller; any other order (a skill named
    // by its name, no such skill or agent) reads the agent and all its skills, as the answer then needs them.
    const found =
      (await store.getSellerSkill(agentName, skillKey(input.skill))) ??
      (await requireAgent(context, agentName))
    const agent = 'seller' in found ? found.seller : found
    // Only a request with an Idempotency-Key is ever compared with another.
    const fingerprint = key === null ? '' : hashSecret(JSON.stringify(input))
    const clientKey = clientKeyOf(options.client)
    if (key !== null) {
      const first = await store.findIdempotentAnswer(agent.name, clientKey, key)
      if (first) return replay(first, fingerprint)
    }
    const task =
      'seller' in found
        ? newTaskOfSkill(context, found, input, clientKey)
        : newTaskRecord(context, found, input, clientKey)
    const guard = await orderGuard(context, agent, task, options.buyerKey)
    const paysNow = input.tx_hash && task.status === 'pending_payment'
    if (paysNow && !input.payer_signature) throw signatureRequired()
    const answer =
      input.tx_hash && input.payer_signature && task.status === 'pending_payment'
        ? await payAtCreation(context, task, input.tx_hash, input.payer_signature)
        : taskAnswer('created', { body: toTaskView(task, config) })
    if (answer.outcome === 'replayed') return answer
    if (key !== null) task.idempotency = { key, fingerprint, status: answer.status, body: answer.body }
    const stored = await insertOrder(context, task, eventsOfNewTask(task), guard)
    if (stored.outcome === 'replay') return replay(stored.answer, fingerprint)
    if (stored.outcome !== 'inserted') throw CLAIM_CONFLICTS[stored.outcome]()
    if (answer.outcome === 'awaiting_confirmations' && task.pendingCheck)
      await store.kvPut(pendingOrderKey(task.pendingCheck.txHash), {
        agentName: task.agentName,
        taskId: task.id,
        signature: task.pendingCheck.signature,
        body: answer.body,
      } satisfies PendingOrder)
    feed.nudge()
    return answer
  }
}
