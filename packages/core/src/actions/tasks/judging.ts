import type { Address, Hex } from 'viem'
import type { AgentRecord } from '../../Agent.ts'
import { ChainUnavailableError, NotFoundError } from '../../errors.ts'
import { DEFAULT_JOB_SECONDS } from '../../Job.ts'
import { sameAddress } from '../../payments/Addresses.ts'
import { latestSlaDeadline } from '../../payments/Escrow.ts'
import { JOB_STATUSES, type JobFundingExpectation } from '../../payments/JobEscrow.ts'
import { isPayerProof } from '../../payments/PayerProof.ts'
import { type PaymentCheck, type Verdict, verifyPayments } from '../../payments/Verifier.ts'
import type { ChainReader, PaymentReceipt } from '../../ports/Chain.ts'
import type { KvStore, TaskStore, UserStore } from '../../ports/Store.ts'
import { type TaskPayment, type TaskRecord, taskAt } from '../../Task.ts'
import type { ActionContext, ActionPorts } from '../context.ts'
import type { PendingVerification } from './answers.ts'
import { ownerWallets } from './jobSteps.ts'

// Base makes a block about every 2 seconds; Retry-After estimates when the missing confirmations arrive.
const BLOCK_SECONDS = 2

/** The task `id` of `agent` as of now (an unpaid task past its expiry reads expired), or a 404. */
export async function requireTask(
  { store, clock }: ActionContext<TaskStore>,
  agent: AgentRecord,
  id: string,
): Promise<TaskRecord> {
  const task = await store.getTask(agent.name, id)
  if (!task) throw taskNotFound(agent.name, id)
  return taskAt(task, clock.now())
}

/** The 404 of a task id the agent named `agentName` does not have. */
export function taskNotFound(agentName: string, id: string): NotFoundError {
  return new NotFoundError('task_not_found', `"${agentName}" has no task "${id}".`)
}

/**
 * What a job escrow funding of `task` must show when judged at `now` (it pays the task then), when the market takes
 * them and the task has a job id.
 */
export function jobExpectationOf(
  config: ActionPorts['config'],
  task: TaskRecord,
  now: Date,
): JobFundingExpectation | null {
  const contract = config.chain.jobEscrowContract
  if (!contract || !task.jobId || !task.payTo) return null
  return {
    contract,
    jobId: task.jobId,
    seller: task.payTo,
    minAmount: task.priceBaseUnits,
    client: task.buyerWallet,
    reviewSeconds: task.reviewSeconds,
    deliverySeconds: task.slaSeconds ?? DEFAULT_JOB_SECONDS,
    // Rounded up: a deadline that passes the check leaves the whole SLA after this instant, never a second less.
    judgedAt: BigInt(Math.ceil(now.getTime() / 1000)),
  }
}

/**
 * True when a job's `client` is the seller's own: the wallet the task pays or its owner's proven wallet. Such a
 * funding never pays the task: the seller knows the task id, so it could otherwise outrun its buyer's funding and
 * become the job's payer and evaluator (it names the evaluator) in the buyer's place.
 */
export async function isSellersOwnClient(
  context: Pick<ActionContext<UserStore>, 'store'>,
  agent: AgentRecord,
  task: TaskRecord,
  client: Address,
): Promise<boolean> {
  const own = [...(task.payTo ? [task.payTo] : []), ...(await ownerWallets(context, agent))]
  return own.some((wallet) => sameAddress(wallet, client))
}

/** What a payment of `task` by `txHash` must show on chain. */
export function checkOf({ config, clock }: ActionPorts, task: TaskRecord, txHash: Hex): PaymentCheck {
  const now = clock.now()
  return {
    txHash,
    kind: 'task',
    expected: {
      token: config.chain.usdcContract,
      // Only purchasable tasks are verified, and those always have a wallet to pay.
      seller: task.payTo ?? '0x0000000000000000000000000000000000000000',
      minAmount: task.priceBaseUnits,
      sender: task.buyerWallet,
      minConfirmations: config.chain.minConfirmations,
      escrow: config.chain.escrowContract,
      // Paid now, the task is due sla_seconds from now: the seller's claim may wait only the slack past that.
      latestSlaDeadline: latestSlaDeadline(task.slaSeconds ?? DEFAULT_JOB_SECONDS, now),
      job: jobExpectationOf(config, task, now),
    },
  }
}

/**
 * Verdicts from the chain, or a 503 when it cannot be read (an unexpected failure kept as its `cause`). `fresh`:
 * receipts the market's chain reader returned moments ago, judged without reading them again (verifyPayments).
 */
export async function judge(
  context: ActionContext<KvStore>,
  checks: PaymentCheck[],
  fresh: readonly PaymentReceipt[] = [],
): Promise<Verdict[]> {
  const { chain } = context
  if (!chain) throw new ChainUnavailableError('This marketplace has no payment chain configured.')
  try {
    const verdicts = await refusingRefunds(context, checks, await verifyPayments(chain, checks, fresh))
    return await refusingMovedJobs(chain, verdicts)
  } catch (error) {
    if (error instanceof ChainUnavailableError) throw error
    // Not a refusal the rules made: the client gets a 503, the host logs what failed.
    throw new ChainUnavailableError(undefined, { cause: error })
  }
}

/** The kv key that claims a transaction as the refund of one task (refundTask.ts). */
export const refundKey = (txHash: Hex) => `refund:tx:${txHash.toLowerCase()}`

/** The verdicts, with a paying transaction that was recorded as a refund refused: it pays no order. */
async function refusingRefunds(context: ActionContext<KvStore>, checks: PaymentCheck[], verdicts: Verdict[]) {
  return Promise.all(
    verdicts.map(async (verdict, index) => {
      const check = checks[index]
      if (!verdict.ok || !check || (await context.store.kvGet(refundKey(check.txHash))) === null)
        return verdict
      return { ok: false, reason: 'tx_is_a_refund', retryable: false } as const
    }),
  )
}

/**
 * The verdicts, with a job funding whose job is no longer funded on chain refused: the follower skipped the job's
 * later events while no task had its key, so a task it paid would read `paid` while the chain has moved on (a submit
 * by the seller, then silence paying it; a refund).
 */
async function refusingMovedJobs(chain: ChainReader, verdicts: Verdict[]): Promise<Verdict[]> {
  return Promise.all(
    verdicts.map(async (verdict) => {
      if (!verdict.ok || !verdict.job || !chain.jobStatus) return verdict
      const status = await chain.jobStatus(verdict.job.contract, verdict.job.key)
      if (JOB_STATUSES[status] === 'funded') return verdict
      return { ok: false, reason: 'job_not_funded', retryable: false } as const
    }),
  )
}

/** The payment record of a verdict that pays. */
export function paymentOf(
  { clock }: ActionPorts,
  verdict: Extract<Verdict, { ok: true }>,
  txHash: Hex,
): TaskPayment {
  return {
    method: verdict.job ? 'job_escrow' : verdict.escrowTaskId ? 'escrow' : 'transfer',
    // A job's funding claims its key, not its transaction: one transaction (a smart wallet's batch) may fund several.
    txHash: verdict.job ? null : txHash,
    escrowTaskId: verdict.escrowTaskId ?? null,
    amountBaseUnits: verdict.amount,
    from: verdict.from,
    at: clock.now(),
    job: verdict.job ?? null,
  }
}

/** The 202 body of a payment not final yet, and when asking again is worthwhile. */
export function pendingVerification(verdict: { confirmations: number; required: number }) {
  return {
    verification: {
      verified: false,
      state: 'pending',
      confirmations: verdict.confirmations,
      required: verdict.required,
    } satisfies PendingVerification,
    retryAfterSeconds: Math.max(1, (verdict.required - verdict.confirmations) * BLOCK_SECONDS),
  }
}

/**
 * True when `signature` is the paying wallet `from`'s EIP-712 claim of `task`'s payment (`forOrder`: signed before the
 * task existed, with task ''). A wallet contract that reverts has not signed; an unreachable chain is a 503.
 */
export async function payerProved(
  { chain, config }: ActionPorts,
  task: TaskRecord,
  txHash: Hex,
  signature: Hex,
  from: Address,
  forOrder: boolean,
): Promise<boolean> {
  if (!chain) throw new ChainUnavailableError('This marketplace has no payment chain configured.')
  const claim = { market: config.baseUrl, agent: task.agentName, task: forOrder ? '' : task.id, txHash }
  try {
    return await isPayerProof(chain, from, config.chain.chainId, claim, signature)
  } catch (error) {
    if (error instanceof ChainUnavailableError) throw error
    return false
  }
}
