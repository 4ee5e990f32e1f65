import type { Address, Hex } from 'viem'
import { nameKey } from '../Agent.ts'
import { entryFromJson, entryToJson, refundedBaseUnits, type TaskOutcome, type TaskRating } from '../Job.ts'
import { escrowJobFromJson, escrowJobToJson } from '../payments/JobEscrow.ts'
import {
  type PendingCheck,
  type TaskPayment,
  type TaskRecord,
  type TaskStatus,
  taskDueAt,
  taskReviewUntil,
} from '../Task.ts'
import { dateOf, ms } from './columns.ts'

/** A task's row (`tasks`); see agentRows.ts for what the SQL stores share. */
export type TaskRow = {
  id: string
  agentKey: string
  skillName: string
  skillSlug: string
  sla: string
  status: string
  priceBaseUnits: number
  payTo: string | null
  params: string | null
  buyer: string | null
  /** The buyer's name key, for its budget's day (Budget.ts). */
  buyerKey: string | null
  buyerEmail: string | null
  buyerWallet: string | null
  paymentMethod: string | null
  txHash: string | null
  escrowTaskId: string | null
  paidAmountBaseUnits: string | null
  paidFrom: string | null
  paidAt: number | null
  pendingTxHash: string | null
  recheckAttempts: number | null
  nextRecheckAt: number | null
  /** While a re-check runs: the end of its lease (in flight until settled or then); else null. */
  recheckLeasedUntil: number | null
  pendingSignature: string | null
  clientKey: string | null
  expiresAt: number | null
  resultUrl: string | null
  idempotencyKey: string | null
  requestFingerprint: string | null
  firstStatus: number | null
  firstBody: string | null
  createdAt: number
  completedAt: number | null
  slaSeconds: number | null
  reviewSeconds: number
  reveal: string
  dueAt: number | null
  deliveredAt: number | null
  reviewUntil: number | null
  outcome: string | null
  entries: string
  /** What its refund records gave back (base units), summed for budgets. */
  refundedBaseUnits: number
  jobId: string | null
  escrowJob: string | null
  rating: string | null
  ratedAt: number | null
}

/** The payment columns of a task row; a paid amount is whatever the chain moved (beyond 2^63, maybe), kept as text. */
export const paymentColumns = (payment: TaskPayment | null) => ({
  paymentMethod: payment?.method ?? null,
  txHash: payment?.txHash ?? null,
  escrowTaskId: payment?.escrowTaskId ?? null,
  paidAmountBaseUnits: payment ? payment.amountBaseUnits.toString() : null,
  paidFrom: payment?.from ?? null,
  paidAt: ms(payment?.at),
  escrowJob: payment?.job ? JSON.stringify(escrowJobToJson(payment.job)) : null,
})

/** The pending-check columns of a task row. */
export const pendingColumns = (check: PendingCheck | null) => ({
  pendingTxHash: check?.txHash ?? null,
  pendingSignature: check?.signature ?? null,
  recheckAttempts: check?.attempts ?? null,
  nextRecheckAt: ms(check?.nextAt),
  // Setting or clearing the check settles a running re-check: it is no longer in flight.
  recheckLeasedUntil: null,
})

/** The rating columns of a task row. */
export const ratingColumns = (rating: TaskRating | null) => ({
  rating: rating ? JSON.stringify({ ...rating, at: rating.at.getTime() }) : null,
  ratedAt: ms(rating?.at),
})

function ratingFromJson(json: Record<string, unknown>): TaskRating {
  return {
    score: Number(json.score),
    comment: String(json.comment ?? ''),
    wallet: json.wallet as Address,
    at: new Date(json.at as number),
  }
}

/** The row of a task. */
export function toTaskRow(task: TaskRecord): TaskRow {
  return {
    id: task.id,
    agentKey: nameKey(task.agentName),
    skillName: task.skillName,
    skillSlug: task.skillSlug,
    sla: task.sla,
    status: task.status,
    // Prices are capped at 10^12 base units, far below 2^53.
    priceBaseUnits: Number(task.priceBaseUnits),
    payTo: task.payTo,
    params: task.params === null ? null : JSON.stringify(task.params),
    buyer: task.buyer,
    buyerKey: task.buyerKey ?? null,
    buyerEmail: task.buyerEmail,
    buyerWallet: task.buyerWallet,
    ...paymentColumns(task.payment),
    ...pendingColumns(task.pendingCheck),
    resultUrl: task.resultUrl,
    idempotencyKey: task.idempotency?.key ?? null,
    requestFingerprint: task.idempotency?.fingerprint ?? null,
    firstStatus: task.idempotency?.status ?? null,
    firstBody: task.idempotency ? JSON.stringify(task.idempotency.body) : null,
    clientKey: task.clientKey,
    expiresAt: ms(task.expiresAt),
    createdAt: task.createdAt.getTime(),
    completedAt: ms(task.completedAt),
    slaSeconds: task.slaSeconds,
    reviewSeconds: task.reviewSeconds,
    reveal: task.reveal,
    // Written for the job sweep's indexes, never read back: the record derives them.
    dueAt: ms(taskDueAt(task)),
    deliveredAt: ms(task.deliveredAt),
    reviewUntil: ms(taskReviewUntil(task)),
    outcome: task.outcome,
    entries: JSON.stringify(task.entries.map(entryToJson)),
    refundedBaseUnits: Number(refundedBaseUnits(task.entries)),
    jobId: task.jobId,
    ...ratingColumns(task.rating),
  }
}

function paymentOf(row: TaskRow): TaskPayment | null {
  if (row.paymentMethod === null || row.paidAt === null) return null
  return {
    method: row.paymentMethod as TaskPayment['method'],
    txHash: row.txHash as Hex | null,
    escrowTaskId: row.escrowTaskId as Hex | null,
    amountBaseUnits: BigInt(row.paidAmountBaseUnits ?? 0),
    from: row.paidFrom as Address | null,
    at: new Date(row.paidAt),
    // Only a job's payment has the field, as the records the core builds.
    ...(row.escrowJob !== null && { job: escrowJobFromJson(JSON.parse(row.escrowJob)) }),
  }
}

/**
 * The first answer kept under a task's Idempotency-Key, if it has one. Its body (a whole answer's JSON) is parsed when
 * first read, a replay's or a rewrite's: every read of a keyed task maps its row, and a buyer polling it never reads it.
 */
export function idempotencyOf(row: TaskRow): TaskRecord['idempotency'] {
  const text = row.firstBody
  if (row.idempotencyKey === null || text === null) return null
  let body: unknown
  let parsed = false
  return {
    key: row.idempotencyKey,
    fingerprint: row.requestFingerprint ?? '',
    status: row.firstStatus ?? 201,
    get body() {
      if (!parsed) {
        body = JSON.parse(text)
        parsed = true
      }
      return body
    },
  }
}

/** The record of a task row, under its agent's registered name. */
export function toTaskRecord(row: TaskRow, agentName: string): TaskRecord {
  const pending =
    row.pendingTxHash === null
      ? null
      : {
          txHash: row.pendingTxHash as Hex,
          signature: row.pendingSignature as Hex | null,
          attempts: row.recheckAttempts ?? 0,
          nextAt: new Date(row.nextRecheckAt ?? 0),
        }
  return {
    id: row.id,
    agentName,
    skillName: row.skillName,
    skillSlug: row.skillSlug,
    sla: row.sla,
    status: row.status as TaskStatus,
    priceBaseUnits: BigInt(row.priceBaseUnits),
    payTo: row.payTo as Address | null,
    params: row.params === null ? null : JSON.parse(row.params),
    buyer: row.buyer,
    ...(row.buyerKey !== null && { buyerKey: row.buyerKey }),
    buyerEmail: row.buyerEmail,
    buyerWallet: row.buyerWallet as Address | null,
    payment: paymentOf(row),
    pendingCheck: pending,
    resultUrl: row.resultUrl,
    idempotency: idempotencyOf(row),
    clientKey: row.clientKey ?? '',
    expiresAt: dateOf(row.expiresAt),
    createdAt: new Date(row.createdAt),
    completedAt: dateOf(row.completedAt),
    slaSeconds: row.slaSeconds,
    reviewSeconds: row.reviewSeconds,
    reveal: row.reveal as TaskRecord['reveal'],
    deliveredAt: dateOf(row.deliveredAt),
    outcome: row.outcome as TaskOutcome | null,
    // Most tasks have no refund or dispute: no JSON to parse.
    entries:
      row.entries === '[]' ? [] : (JSON.parse(row.entries) as Record<string, unknown>[]).map(entryFromJson),
    jobId: row.jobId as Hex | null,
    rating: row.rating === null ? null : ratingFromJson(JSON.parse(row.rating)),
  }
}
