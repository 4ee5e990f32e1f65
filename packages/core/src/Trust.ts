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

/**
 * What a buyer wallet must have paid sellers unconnected to an agent (another agent, another owner, another wallet),
 * counting each such seller up to TRUST_CREDIT_PER_BUYER, to count as an established buyer of that agent.
 */
export const STANDING_ELSEWHERE_BASE_UNITS = 10_000_000n
/** How long before paying an agent a buyer wallet's first credited payment on the market must be, to be established. */
export const STANDING_AGE_MS = 30 * 24 * 60 * 60 * 1000

/**
 * A buyer wallet's history on the market when it pays an agent: what it had paid sellers unconnected to that agent
 * (each capped), and when its first credited payment to any seller was (null: this is its first).
 */
export type BuyerHistory = { elsewhereBaseUnits: bigint; firstPaidAt: Date | null }

/**
 * True when a buyer is established toward an agent at `at`: it paid unconnected sellers STANDING_ELSEWHERE_BASE_UNITS
 * and has been paying on this market for STANDING_AGE_MS. A ring of fresh wallets that only pay one agent is neither;
 * recycling money through the actor's own other agents still takes a month of wallet age.
 */
export function isEstablished(history: BuyerHistory, at: Date): boolean {
  const first = history.firstPaidAt
  return (
    history.elsewhereBaseUnits >= STANDING_ELSEWHERE_BASE_UNITS &&
    first !== null &&
    at.getTime() - first.getTime() >= STANDING_AGE_MS
  )
}

/** The agent's counters the paid points read: all credit, and the part (and wallets) of established buyers. */
export type CreditCounts = Pick<
  AgentRecord,
  'trustCreditBaseUnits' | 'establishedCreditBaseUnits' | 'establishedBuyers'
>

/**
 * Paid points from an agent's credit: established buyers count one each, up to 10 USDC each; every other buyer wallet
 * (without history elsewhere or age) counts together as one more buyer of at most 10 USDC, however many there are.
 * It reads only the stored counters (standing is judged when a buyer pays, not when asked), so the SQL stores keep it
 * as `agents.paid_points`, written with the counters, and sort by trust reading that column.
 */
export function countedPaidTrust(counts: CreditCounts): number {
  const newcomers = counts.trustCreditBaseUnits - counts.establishedCreditBaseUnits
  const newcomerCredit = newcomers < TRUST_CREDIT_PER_BUYER ? newcomers : TRUST_CREDIT_PER_BUYER
  const buyers = counts.establishedBuyers + (newcomers > 0n ? 1 : 0)
  return paidTrust(counts.establishedCreditBaseUnits + newcomerCredit, buyers)
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

/** On-time buyers every agent is granted before its first judged job, so one buyer's late jobs take at most a third. */
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
 * What one wallet's vote weighs, in thousandths: what it paid the agent for delivered tasks (its credit) over
 * TRUST_CREDIT_PER_BUYER, so a vote bought for 0.01 USDC weighs 1/1000 of one backed by 10 USDC the agent kept.
 */
export function voteWeight(paidBaseUnits: bigint): number {
  const weight = paidBaseUnits / (TRUST_CREDIT_PER_BUYER / 1000n)
  return Number(weight < 1000n ? weight : 1000n)
}

/** A wallet's vote times its weight, in thousandths (rounded down), as `ratingVotes` sums it. */
export function weightedVote(count: number, sum: number, paidBaseUnits: bigint): number {
  return Math.floor((ratingVote(count, sum) * voteWeight(paidBaseUnits)) / 1000)
}

/**
 * One buyer's on-time vote in thousandths: the share of its judged jobs (delivered by the deadline, or missed) that
 * were on time, rounded down. However many jobs it funded, it is one vote.
 */
export function reliabilityVote(onTime: number, late: number): number {
  return onTime + late === 0 ? 0 : Math.floor((1000 * onTime) / (onTime + late))
}

/**
 * The paid points kept by an agent's record: paid × reliability × satisfaction, rounded half up, where reliability is
 * (2 + Σ on-time votes) / (2 + voters), one vote per established buyer whose jobs were judged and one for every other
 * wallet together (reliabilityVote), and satisfaction (2 + Σ weight × vote) / (2 + Σ weight), votes in 0..1 per rating
 * wallet, weights in 0..1 by what it paid (voteWeight). A record without judged jobs or ratings keeps all its paid
 * points. Integer arithmetic, as the stores sort by it.
 */
export function keptPaidTrust(
  paid: number,
  agent: Pick<AgentRecord, 'reliabilityVotes' | 'reliabilityWeight' | 'ratingVotes' | 'ratingWeight'>,
): number {
  const numerator =
    BigInt(paid) *
    BigInt(1000 * ON_TIME_PRIOR + agent.reliabilityVotes) *
    BigInt(1000 * RATING_PRIOR + agent.ratingVotes)
  const denominator =
    BigInt(1000 * ON_TIME_PRIOR + agent.reliabilityWeight) * BigInt(1000 * RATING_PRIOR + agent.ratingWeight)
  return Number((2n * numerator + denominator) / (2n * denominator))
}

/** Trust score, an integer from 0 to 100, computed at read time (README "Trust score"). */
export function trustScore(agent: AgentRecord, now: Date): number {
  return selfMadeTrust(agent, now) + keptPaidTrust(countedPaidTrust(agent), agent)
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

/** One buyer wallet's row of an agent's trust (trust_buyers): its credit, standing, ratings and judged jobs. */
export type TrustBuyerRow = {
  paidBaseUnits: bigint
  established: boolean
  ratingCount: number
  ratingSum: number
  /** Jobs it funded that the agent delivered by their deadline, and those it missed. */
  onTimeJobs: number
  lateJobs: number
}

/**
 * The agent's trust counters summed from its buyer rows, as every store keeps them (Store.changeTask, rateTask). Judged
 * jobs count as paid credit does (countedPaidTrust): each established buyer is one on-time vote, every other wallet
 * together one more, so fresh wallets missing deadlines (or the seller's own paying on time) move it as one buyer.
 */
export function trustTotals(
  rows: Iterable<TrustBuyerRow>,
): Pick<
  AgentRecord,
  | 'trustCreditBaseUnits'
  | 'payingBuyers'
  | 'establishedCreditBaseUnits'
  | 'establishedBuyers'
  | 'ratedBuyers'
  | 'ratingVotes'
  | 'ratingWeight'
  | 'reliabilityVotes'
  | 'reliabilityWeight'
> {
  const totals = {
    trustCreditBaseUnits: 0n,
    payingBuyers: 0,
    establishedCreditBaseUnits: 0n,
    establishedBuyers: 0,
    ratedBuyers: 0,
    ratingVotes: 0,
    ratingWeight: 0,
    reliabilityVotes: 0,
    reliabilityWeight: 0,
  }
  const newcomers = { onTime: 0, late: 0 }
  for (const row of rows) {
    const paying = row.paidBaseUnits > 0n
    totals.trustCreditBaseUnits += row.paidBaseUnits
    totals.payingBuyers += paying ? 1 : 0
    if (row.established && paying) {
      totals.establishedCreditBaseUnits += row.paidBaseUnits
      totals.establishedBuyers += 1
    }
    if (row.ratingCount > 0) {
      totals.ratedBuyers += 1
      totals.ratingVotes += weightedVote(row.ratingCount, row.ratingSum, row.paidBaseUnits)
      totals.ratingWeight += voteWeight(row.paidBaseUnits)
    }
    if (row.onTimeJobs + row.lateJobs === 0) continue
    if (row.established) {
      totals.reliabilityVotes += reliabilityVote(row.onTimeJobs, row.lateJobs)
      totals.reliabilityWeight += 1000
    } else {
      newcomers.onTime += row.onTimeJobs
      newcomers.late += row.lateJobs
    }
  }
  if (newcomers.onTime + newcomers.late > 0) {
    totals.reliabilityVotes += reliabilityVote(newcomers.onTime, newcomers.late)
    totals.reliabilityWeight += 1000
  }
  return totals
}
