import { type Address, zeroAddress } from 'viem'
import type { AgentRecord } from './Agent.ts'
import { liveness } from './Liveness.ts'
import type { PaymentMethod, TaskRecord } from './Task.ts'

/** The most that one buyer wallet's payments count toward one agent's trust: 10 USDC, in base units. */
export const TRUST_CREDIT_PER_BUYER = 10_000_000n

/**
 * Payments that credit trust: those this server saw on chain with their payer (a transfer, an escrow deposit, or an
 * x402 authorization it settled). Free tasks prove nothing, and MPP charges settle on another network whose payer is
 * not checked here.
 */
export const TRUST_CREDITED_METHODS: readonly PaymentMethod[] = ['transfer', 'escrow', 'x402']

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

/** Trust score, an integer from 0 to 100, computed at read time (README "Trust score"). */
export function trustScore(agent: AgentRecord, now: Date): number {
  return selfMadeTrust(agent, now) + paidTrust(agent.trustCreditBaseUnits, agent.payingBuyers)
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
