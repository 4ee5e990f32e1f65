import { type Address, zeroAddress } from 'viem'
import type { AgentRecord } from './Agent.ts'
import { liveness } from './Liveness.ts'
import type { PaymentMethod, TaskRecord } from './Task.ts'

/** The most that one buyer wallet's payments count toward one agent's trust: 10 USDC, in base units. */
export const TRUST_CREDIT_PER_BUYER = 10_000_000n

/**
 * Payments that credit trust: those this server saw on chain with their payer (a transfer, an escrow deposit, an
 * x402 authorization it settled, or a job escrow funding). Free tasks prove nothing, and MPP charges settle on another network whose payer is
 * not checked here.
 */
export const TRUST_CREDITED_METHODS: readonly PaymentMethod[] = ['transfer', 'escrow', 'x402', 'job_escrow']

/** Points an agent can earn by its own requests alone, all together. */
export const SELF_MADE_CEILING = 30
/** Points that only other wallets' on-chain payments for delivered tasks can earn. */
export const PAID_CEILING = 70
/** Each this many USDC of credit halves the paid points still to earn. */
export const PAID_HALVING_USDC = 20
/** Paid points per distinct paying buyer wallet, at most: one wallet paying a lot is still one buyer. */
export const POINTS_PER_BUYER = 10

/** The self-made points of each fact, as selfMadeTrust adds them (stores that sort by trust read them too). */
export const SELF_MADE_POINTS = {
  registered: 5,
  profile: 5,
  wallet: 5,
  owner: 5,
  perMilestone: 1,
  milestones: 5,
  presence: { live: 5, idle: 2, off: 0 },
} as const

/**
 * Self-made points, 30 at most: 5 for being registered, 5 for a complete profile (a bio and a skill), 5 for a payment
 * wallet, 5 for an owner proven by wallet signature, 1 per milestone up to 5 (a proof URL proves nothing by itself, so
 * verified and claimed count alike), and 5 when live (2 when idle).
 */
export function selfMadeTrust(agent: AgentRecord, now: Date): number {
  const points = SELF_MADE_POINTS
  const profile = agent.bio && agent.skills.length > 0 ? points.profile : 0
  const wallet = agent.walletAddress ? points.wallet : 0
  const owner = agent.ownerUsername && agent.ownerProven ? points.owner : 0
  const milestoneCount = agent.verifiedMilestones + agent.claimedMilestones
  const milestones = Math.min(points.milestones, points.perMilestone * milestoneCount)
  const presence = points.presence[liveness(agent.lastSeen, now)]
  return points.registered + profile + wallet + owner + milestones + presence
}

/** Paid points, 70 at most: round(70 × (1 − 2^(−C / 20 USDC))) for a credit C, and at most 10 per paying buyer. */
export function paidTrust(creditBaseUnits: bigint, payingBuyers: number): number {
  const usdc = Number(creditBaseUnits) / 1_000_000
  const curve = Math.round(PAID_CEILING * (1 - 2 ** (-usdc / PAID_HALVING_USDC)))
  return Math.min(curve, POINTS_PER_BUYER * payingBuyers)
}

/** The least credit (base units) at which the paid curve alone reaches `points`, found by bisection. */
function leastCreditFor(points: number): bigint {
  let high = 1n
  while (paidTrust(high, PAID_CEILING) < points) high *= 2n
  let low = 0n
  while (low < high) {
    const middle = (low + high) / 2n
    if (paidTrust(middle, PAID_CEILING) >= points) high = middle
    else low = middle + 1n
  }
  return low
}

/**
 * The credit (base units) from which the paid curve gives 1, 2, … 70 points: the curve of a credit C is the number
 * of steps at or below C, so a store can rank by paidTrust with comparisons alone (SQLite has no pow), exactly.
 */
export const PAID_TRUST_STEPS: readonly bigint[] = Array.from({ length: PAID_CEILING }, (_, index) =>
  leastCreditFor(index + 1),
)

/** On-time jobs every agent is granted before its first, so one late job does not zero its reliability. */
export const ON_TIME_PRIOR = 2
/** Content buyers every agent is granted before its first rating, so one buyer's votes move it by at most a third. */
export const RATING_PRIOR = 2

/**
 * One buyer wallet's vote in thousandths: the mean of its ratings of the agent on the 1-5 scale as (mean − 1) / 4,
 * rounded. However many tasks a wallet rates, it is one vote.
 */
export function ratingVote(count: number, sum: number): number {
  return count === 0 ? 0 : Math.floor((2000 * (sum - count) + 4 * count) / (8 * count))
}

/**
 * The paid points kept by an agent's record: paid × reliability × satisfaction, rounded half up, where reliability is
 * (onTime + 2) / (onTime + late + 2) and satisfaction (2 + Σ votes) / (2 + rated buyers), votes in 0..1 per buyer.
 * A record without late jobs or ratings keeps all its paid points. Integer arithmetic, as the stores sort by it.
 */
export function keptPaidTrust(
  paid: number,
  agent: Pick<AgentRecord, 'onTimeTasks' | 'lateTasks' | 'ratingVotes' | 'ratedBuyers'>,
): number {
  const numerator =
    BigInt(paid) * BigInt(agent.onTimeTasks + ON_TIME_PRIOR) * BigInt(1000 * RATING_PRIOR + agent.ratingVotes)
  const denominator =
    BigInt(agent.onTimeTasks + agent.lateTasks + ON_TIME_PRIOR) *
    1000n *
    BigInt(RATING_PRIOR + agent.ratedBuyers)
  return Number((2n * numerator + denominator) / (2n * denominator))
}

/** Trust score, an integer from 0 to 100, computed at read time (README "Trust score"). */
export function trustScore(agent: AgentRecord, now: Date): number {
  const paid = paidTrust(agent.trustCreditBaseUnits, agent.payingBuyers)
  return selfMadeTrust(agent, now) + keptPaidTrust(paid, agent)
}

/**
 * The buyer wallet a delivered task credits to its seller, or null: the payer of a payment seen on chain, unless it is
 * the wallet the task paid (`payTo`) or one of `ownWallets` (the seller's current wallet, its owner's).
 */
export function creditedBuyer(task: TaskRecord, ownWallets: readonly (string | null)[]): Address | null {
  const payment = task.payment
  if (!payment?.from || !TRUST_CREDITED_METHODS.includes(payment.method) || payment.amountBaseUnits <= 0n)
    return null
  // The zero address is a mint's sender: money nobody is known to have paid.
  const own = [task.payTo, zeroAddress, ...ownWallets].flatMap((wallet) =>
    wallet ? [wallet.toLowerCase()] : [],
  )
  return own.includes(payment.from.toLowerCase()) ? null : payment.from
}

/** What a buyer's credit becomes after paying `amount` more: the sum, capped at TRUST_CREDIT_PER_BUYER. */
export function cappedCredit(before: bigint, amount: bigint): bigint {
  const sum = before + amount
  return sum < TRUST_CREDIT_PER_BUYER ? sum : TRUST_CREDIT_PER_BUYER
}
