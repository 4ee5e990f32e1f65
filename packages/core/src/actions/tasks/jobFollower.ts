import type { Address } from 'viem'
import { feedEvents } from '../../events.ts'
import type { TaskEntry } from '../../Job.ts'
import { decodeJobEvent, type JobEvent, judgeJobFunding, reasonHash } from '../../payments/JobEscrow.ts'
import type { AgentStore, KvStore, TaskChange, TaskStore, UserStore } from '../../ports/Store.ts'
import type { TaskPayment, TaskRecord } from '../../Task.ts'
import type { ActionContext } from '../context.ts'
import { ownerWallets, reliabilityCounts } from './jobSteps.ts'
import { isSellersOwnClient, jobExpectationOf } from './judging.ts'

/** How many blocks before the head the follower starts on its first run without a configured start block. */
export const JOB_FOLLOWER_LOOKBACK_BLOCKS = 50_000n
/** The most blocks one pass reads (one eth_getLogs). */
export const JOB_FOLLOWER_MAX_BLOCKS = 2_000n

/** What one pass of the follower did: the blocks it read and what became of their events. */
export type JobFollowReport = {
  fromBlock: bigint | null
  toBlock: bigint | null
  /** Events that moved a task. */
  applied: number
  /** Events of jobs no task has, or already applied (a pass after a crash reads them again). */
  skipped: number
}

type Applied = 'applied' | 'skipped'

/** The key under which the follower keeps the last block it finished, per contract. */
const cursorKey = (contract: string) => `jobEscrow:cursor:${contract.toLowerCase()}`

/** The refund the escrow made of a job's budget to its buyer, as a record. */
function chainRefund(task: TaskRecord, event: JobEvent, at: Date, reason: string): TaskEntry {
  return {
    kind: 'refund',
    by: 'chain',
    wallet: null,
    at,
    amountBaseUnits: task.payment?.amountBaseUnits ?? null,
    reason,
    txHash: event.txHash,
  }
}

/** The store change an event of a funded job makes, or null when it changes nothing. */
function changeOf(
  task: TaskRecord,
  event: JobEvent,
  at: Date,
  ownWallets: readonly Address[],
): TaskChange | null {
  const base = { id: task.id, at }
  switch (event.name) {
    case 'JobSubmitted':
      return {
        ...base,
        from: ['paid'],
        to: 'delivered',
        deliveredAt: new Date(Number(event.submittedAt) * 1000),
        // The chain holds the seller's commitment: a result URL kept through the API shows only if it is the one.
        ...(!(task.resultUrl && reasonHash(task.resultUrl) === event.deliverable) && { resultUrl: null }),
        counts: reliabilityCounts(task, 'onTime', ownWallets),
        events: [feedEvents.taskDelivered(task, at)],
      }
    case 'JobCompleted': {
      const outcome = event.bySilence ? 'accepted_by_silence' : 'accepted'
      return {
        ...base,
        from: ['delivered'],
        to: 'completed',
        completedAt: at,
        outcome,
        counts: { completed: true },
        events: [feedEvents.taskCompleted(task, at, outcome)],
      }
    }
    case 'JobRejected': {
      const dispute: TaskEntry = {
        kind: 'dispute',
        by: task.payment?.job && event.rejector === task.payment.job.client ? 'buyer' : 'evaluator',
        wallet: event.rejector,
        at,
        amountBaseUnits: task.payment?.amountBaseUnits ?? null,
        reason: `rejected on chain (reason ${event.reason})`,
        txHash: event.txHash,
      }
      const refund = chainRefund(task, event, at, 'the escrow returned the budget on rejection')
      return {
        ...base,
        from: ['delivered'],
        to: 'rejected',
        outcome: 'rejected',
        entries: [dispute, refund],
        counts: { dispute: true, refund: true },
        events: [
          feedEvents.taskRejected(task, at),
          feedEvents.taskRefunded(task, at, refund.amountBaseUnits ?? 0n, event.txHash),
        ],
      }
    }
    case 'JobExpired': {
      const refund = chainRefund(
        task,
        event,
        at,
        'not delivered by deliver_by: the escrow refunded the budget',
      )
      return {
        ...base,
        from: ['paid'],
        to: 'expired',
        outcome: 'late',
        entries: [refund],
        counts: { ...reliabilityCounts(task, 'late', ownWallets), refund: true },
        events: [
          feedEvents.taskLate(task, at),
          feedEvents.taskRefunded(task, at, refund.amountBaseUnits ?? 0n, event.txHash),
        ],
      }
    }
    default:
      return null
  }
}

/**
 * Pays the task whose job a JobFunded event funded, when its terms are the task's and its client is the order's
 * `buyer_wallet`. A job id is public from the moment its fund call is broadcast, so anyone can fund it first: a
 * funding whose client the order did not name pays only through verify-payment, with that client's signature of the
 * task id (docs/jobs.md).
 */
async function applyFunding(
  context: ActionContext<AgentStore & UserStore & TaskStore>,
  event: Extract<JobEvent, { name: 'JobFunded' }>,
): Promise<Applied> {
  const { store, clock, config } = context
  const task = await store.getTaskByEscrowJob({ jobId: event.jobId })
  const now = clock.now()
  // Judged as of its block: the follower reads events in chain order, so a funding made in time pays even when the
  // follower runs late, and the job's later events follow it. A seller left less than its SLA that way is never
  // counted late (reliabilityCounts); only verify-payment, which a buyer may hold back, judges at its own time.
  const fundedAt = new Date(Number(event.fundedAt) * 1000)
  const expected = task && task.status === 'pending_payment' ? jobExpectationOf(config, task, fundedAt) : null
  if (!task?.buyerWallet || !expected) return 'skipped'
  const judged = judgeJobFunding([event], expected)
  if (!judged.ok) return 'skipped'
  const seller = await store.getAgent(task.agentName)
  if (!seller || (await isSellersOwnClient(context, seller, task, judged.job.client))) return 'skipped'
  const payment: TaskPayment = {
    method: 'job_escrow',
    txHash: null,
    escrowTaskId: judged.job.key,
    amountBaseUnits: judged.amount,
    from: judged.job.client,
    at: now,
    job: judged.job,
  }
  const paid = await store.markTaskPaid(task.id, payment, [feedEvents.taskPaid(task, event.txHash, now)])
  return paid === 'paid' ? 'applied' : 'skipped'
}

/** Applies one event to its task: each is a compare-and-set, so an event applied twice lands once. */
async function applyJobEvent(
  context: ActionContext<AgentStore & UserStore & TaskStore>,
  event: JobEvent,
): Promise<Applied> {
  if (event.name === 'JobFunded') return applyFunding(context, event)
  const task = await context.store.getTaskByEscrowJob({ key: event.key })
  const seller = task && (await context.store.getAgent(task.agentName))
  const change =
    task && seller && changeOf(task, event, context.clock.now(), await ownerWallets(context, seller))
  if (!change) return 'skipped'
  return (await context.store.changeTask(change)) ? 'applied' : 'skipped'
}

/** The follower of the job escrow's events (docs/jobs.md). */
export function jobFollowerActions(context: ActionContext<AgentStore & UserStore & TaskStore & KvStore>) {
  const { store, chain, config, feed } = context
  return {
    /**
     * Reads the job escrow's events from the block after the last one it finished up to the head less the
     * confirmations, applies each to its task, then records that block. A process killed between the chain event and
     * the database resumes from the recorded block: events read twice land once. Hosts call it on a timer.
     */
    async followJobEscrow(maxBlocks = JOB_FOLLOWER_MAX_BLOCKS): Promise<JobFollowReport> {
      const contract = config.chain.jobEscrowContract
      const report: JobFollowReport = { fromBlock: null, toBlock: null, applied: 0, skipped: 0 }
      if (!contract || !chain?.contractLogs) return report
      const confirmed = (await chain.headBlock()) - BigInt(config.chain.minConfirmations - 1)
      const stored = (await store.kvGet(cursorKey(contract))) as { block: string } | null
      const start = config.chain.jobEscrowStartBlock ?? confirmed - JOB_FOLLOWER_LOOKBACK_BLOCKS
      const fromBlock = stored ? BigInt(stored.block) + 1n : start > 0n ? start : 0n
      if (fromBlock > confirmed) return report
      const toBlock = confirmed < fromBlock + maxBlocks - 1n ? confirmed : fromBlock + maxBlocks - 1n
      for (const log of await chain.contractLogs(contract, fromBlock, toBlock)) {
        const event = decodeJobEvent(log)
        const outcome = event ? await applyJobEvent(context, event) : 'skipped'
        report[outcome] += 1
      }
      // Only forward: a slower pass of another process never moves the cursor back.
      await store.kvUpdate(cursorKey(contract), (current) => {
        const done = (current as { block: string } | null)?.block
        if (done !== undefined && BigInt(done) >= toBlock) return { op: 'noop', result: null }
        return { op: 'set', value: { block: toBlock.toString() }, result: null }
      })
      if (report.applied > 0) feed.nudge()
      return { ...report, fromBlock, toBlock }
    },
  }
}
