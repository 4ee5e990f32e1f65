import type { Hex } from 'viem'
import { feedEvents } from '../../events.ts'
import { RECHECK_FAIR_SHARE } from '../../FairQueue.ts'
import {
  MAX_RECHECKS,
  MAX_RECHECKS_PER_CLIENT,
  MAX_UNMINED_RECHECKS,
  recheckDelayMs,
} from '../../PaymentRechecks.ts'
import type { Verdict } from '../../payments/Verifier.ts'
import { AUTHORIZATION_SLACK_SECONDS, settlementKey } from '../../payments/X402.ts'
import type { AgentStore, KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { EXPIRED_TASK_RETENTION_MS, type TaskRecord } from '../../Task.ts'
import type { ActionContext } from '../context.ts'
import { forgetAll, sweepForgotten } from '../kvRetention.ts'
import { pendingOrderKey } from './createTask.ts'
import { stepOfTime } from './jobSteps.ts'
import { checkOf, judge, payerProved, paymentOf } from './judging.ts'
import { paidBy, x402Settlement, x402SettlementBy } from './x402Payment.ts'
import { taskPaymentKey } from './x402Tasks.ts'

/**
 * How long a re-check pass holds the tasks it claimed, unless the host says otherwise: far more than a pass takes
 * (one batch of chain reads, each bounded by its timeout); a pass that dies leaves them due again after it.
 */
export const RECHECK_LEASE_MS = 120_000

/** What one background pass did. */
export type RecheckReport = {
  checked: number
  paid: number
  refused: number
  stillPending: number
  /** Why the chain could not be read this pass (the checks wait for the next); the host logs it. */
  failure?: unknown
}

/** False when the client already has as many background re-checks as it may (clients named by the host only). */
export async function withinRecheckBudget(
  { store }: ActionContext<TaskStore>,
  clientKey: string,
): Promise<boolean> {
  return clientKey === '' || (await store.countPendingChecks(clientKey)) < MAX_RECHECKS_PER_CLIENT
}

/** Drops a task's check: its payment will not be looked at again. */
async function drop({ store }: ActionContext<TaskStore>, task: TaskRecord): Promise<'refused'> {
  await store.setPendingCheck(task.id, null)
  return 'refused'
}

/**
 * The verdict on an x402 settlement that did not pay by itself: another transaction may have used the same
 * authorization first (a front-run settlement pays the order all the same). Other checks keep their verdict.
 */
async function x402Verdict(
  context: ActionContext<KvStore>,
  task: TaskRecord,
  txHash: Hex,
  verdict: Verdict | null,
) {
  if (verdict?.ok || task.pendingCheck?.signature !== null) return { txHash, verdict }
  const settlement = await x402Settlement(context, txHash)
  if (!settlement?.nonce) return { txHash, verdict }
  return paidBy(context, { ...task, buyerWallet: settlement.payer }, txHash, settlement.nonce)
}

/**
 * True while an x402 settlement this server sent can still be mined and pay: its authorization is still valid (a
 * reorged or delayed transaction comes back within it). Dropping its check before then would leave a payment that
 * lands unrecorded, and the order open to a second one.
 */
async function settlementMayLand(
  context: ActionContext<KvStore>,
  check: NonNullable<TaskRecord['pendingCheck']>,
): Promise<boolean> {
  if (check.signature !== null) return false
  const settlement = await x402Settlement(context, check.txHash)
  if (settlement?.validBefore == null) return false
  return context.clock.now().getTime() / 1000 < settlement.validBefore + AUTHORIZATION_SLACK_SECONDS
}

/** Applies one re-check verdict (null: the chain could not be read) to its task. */
async function settleRecheck(
  context: ActionContext<TaskStore & KvStore>,
  task: TaskRecord,
  judged: Verdict | null,
): Promise<'paid' | 'refused' | 'stillPending'> {
  const { store, clock } = context
  const check = task.pendingCheck
  if (!check) return 'refused'
  const { txHash, verdict } = await x402Verdict(context, task, check.txHash, judged)
  if (verdict?.ok) {
    // A payer signature sent with the hash, or (no signature) an x402 settlement this server sent for that payer.
    // The signature came with the order (its claim names no task) or with verify-payment (it names this task).
    const proved =
      check.signature !== null
        ? (await payerProved(context, task, check.txHash, check.signature, verdict.from, true)) ||
          (await payerProved(context, task, check.txHash, check.signature, verdict.from, false))
        : await x402SettlementBy(context, check.txHash, verdict.from)
    if (!proved) return drop(context, task)
    const payment = {
      ...paymentOf(context, verdict, txHash),
      ...(check.signature === null ? { method: 'x402' as const } : {}),
    }
    const outcome = await store.markTaskPaid(task.id, payment, [
      feedEvents.taskPaid(task, txHash, payment.at),
    ])
    return outcome === 'paid' ? 'paid' : drop(context, task)
  }
  if (verdict && verdict.reason !== 'pending') return drop(context, task)
  // A chain that could not be read says nothing about the payment: the pass spends none of the check's attempts.
  const attempts = verdict === null ? check.attempts : check.attempts + 1
  // A hash the chain has never shown mined gets a few minutes, not the whole budget.
  const unmined =
    verdict !== null && !verdict.ok && verdict.reason === 'pending' && verdict.confirmations === 0
  const spent = attempts >= (unmined ? MAX_UNMINED_RECHECKS : MAX_RECHECKS)
  if (spent && !(unmined && (await settlementMayLand(context, check)))) return drop(context, task)
  const nextAt = new Date(clock.now().getTime() + recheckDelayMs(attempts))
  await store.setPendingCheck(task.id, { ...check, attempts, nextAt })
  return 'stillPending'
}

/**
 * Removes the key-value rows that served a payment's wait once its re-check paid or dropped it: an order's kept 202
 * (card rails), or an x402 settlement's record, the order's claim that waited with it and its task's "payment under
 * way" marker. None guards a replay: the
 * paid task's claim on the hash (tasks table) and the x402 authorization marker (kept) do.
 */
async function forgetCheckRows({ store }: ActionContext<KvStore>, task: TaskRecord) {
  const check = task.pendingCheck
  if (!check) return
  if (check.signature !== null) return store.kvDelete(pendingOrderKey(check.txHash))
  // The order's claim answered retries without a key while the payment waited: it has nothing left to answer. All of
  // them go in one write.
  const settlement = await x402Settlement({ store }, check.txHash)
  await forgetAll(store, [...(settlement?.waits ?? []), settlementKey(check.txHash), taskPaymentKey(task.id)])
}

/** The background actions hosts call on a timer: payment re-checks and the expiry of unpaid tasks. */
export function recheckActions(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  const { store, clock, feed } = context
  return {
    /**
     * One pass of the background re-check: verifies, in one batch, the payments sent at creation whose check is due,
     * claimed by the fair share (FairQueue.ts RECHECK_FAIR_SHARE: per-seller and per-client quotas, round-robin across
     * sellers, at most `limit`), and pays, reschedules (bounded back-off) or drops each. Hosts call it on a timer.
     */
    async recheckPendingPayments(
      limit = RECHECK_FAIR_SHARE.limit,
      leaseMs = RECHECK_LEASE_MS,
    ): Promise<RecheckReport> {
      const now = clock.now()
      // Claimed where the store can (each task leased to this pass), so processes on one database split the work.
      const due = store.claimDueRechecks
        ? await store.claimDueRechecks(now, new Date(now.getTime() + leaseMs), {
            ...RECHECK_FAIR_SHARE,
            limit,
          })
        : await store.listDueRechecks(now, limit)
      const report: RecheckReport = { checked: due.length, paid: 0, refused: 0, stillPending: 0 }
      if (due.length === 0 || !context.chain) return report
      const checks = due.flatMap((task) =>
        task.pendingCheck ? [checkOf(context, task, task.pendingCheck.txHash)] : [],
      )
      const verdicts = await judge(context, checks).catch((error: unknown) => {
        report.failure = error
        return null
      })
      for (const [index, task] of due.entries()) {
        const outcome = await settleRecheck(context, task, verdicts?.[index] ?? null)
        report[outcome] += 1
        if (outcome !== 'stillPending' && task.pendingCheck) await forgetCheckRows(context, task)
      }
      if (report.paid > 0) feed.nudge()
      return report
    },

    /**
     * Moves unpaid tasks past their `expires_at` to `expired`, and deletes those expired for longer than the
     * retention (EXPIRED_TASK_RETENTION_MS), then the key-value rows whose time is up (kvRetention.ts: spent x402
     * authorizations' markers). Hosts call it on a timer, beside the re-checks.
     */
    async expireUnpaidTasks(limit = 500): Promise<{ expired: number; purged: number }> {
      const now = clock.now()
      const report = await store.expireTasks(now, new Date(now.getTime() - EXPIRED_TASK_RETENTION_MS), limit)
      await sweepForgotten(store, now, limit)
      return report
    },

    /**
     * Stores what time alone decided (reads show it already, taskAt): paid tasks past `due_at` become `expired`
     * (late), deliveries past `review_until` `completed` (accepted by silence). Hosts call it on a timer, beside the
     * expiry; racing processes each land a step once (compare-and-set).
     */
    async settleDueJobs(limit = 500): Promise<{ late: number; accepted: number }> {
      const now = clock.now()
      const report = { late: 0, accepted: 0 }
      for (const task of await store.listDueJobs(now, limit)) {
        const step = await stepOfTime(context, task, now)
        if (step && (await store.changeTask(step))) report[step.to === 'expired' ? 'late' : 'accepted'] += 1
      }
      if (report.late + report.accepted > 0) feed.nudge()
      return report
    },
  }
}
