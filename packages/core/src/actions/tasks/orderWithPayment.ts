import type { Hex } from 'viem'
import { type AgentRecord, nameKey } from '../../Agent.ts'
import { hashSecret } from '../../Credentials.ts'
import {
  ChainUnavailableError,
  MarketError,
  NotFoundError,
  PaymentOutcomeUnknownError,
} from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import { formatAmount } from '../../Money.ts'
import { acceptsPayment } from '../../payments/AcceptPayment.ts'
import {
  type ChargeOutcome,
  type ChargeRequest,
  isPaymentCredential,
  type MppCharger,
  paymentReferenceOf,
  signedTransferOf,
} from '../../payments/Mpp.ts'
import { withClaimTogether } from '../../payments/MppBroadcast.ts'
import { withTaskClaim } from '../../payments/MppReceipt.ts'
import { paymentRequiredHeader, X402_HEADERS, type X402Settings } from '../../payments/X402.ts'
import { inChainBudget } from '../../ports/chainBudget.ts'
import type { AgentStore, KvStore, StoreLifecycle, TaskStore } from '../../ports/Store.ts'
import { inWriteScope } from '../../ports/writeScope.ts'
import { READ_CACHE_ENTRIES, readCache } from '../../ReadCache.ts'
import type { TaskPayment, TaskRecord } from '../../Task.ts'
import { PaidOrderInput } from '../../TaskInput.ts'
import { toTaskView } from '../../TaskView.ts'
import { parseInput } from '../../Validation.ts'
import { type ActionContext, type ActionPorts, agentNotFound, requireAgent } from '../context.ts'
import { parseIdempotencyKey } from '../idempotency.ts'
import { eventsOfNewTask, newTaskRecord } from '../newTask.ts'
import { buyerKeyOf, insertOrder, orderGuard, refuseIfDaySpent, releaseHold } from './budgetGuard.ts'
import { earlierMppCredential, type MppOrderKey, mppOrderClaims, releaseMppOrder } from './mppOrders.ts'
import { orderWithX402, x402Problem } from './orderWithX402.ts'
import { CLAIM_CONFLICTS } from './refusals.ts'
import { paymentInProgress } from './x402Orders.ts'
import { x402Offer } from './x402Payment.ts'

/** What an order asks for, in a fixed field order, so row 8 and row 12 bodies of one order have one digest. */
function orderText(slug: string, input: PaidOrderInput): string {
  const { params, buyer, buyer_email, buyer_wallet } = input
  return JSON.stringify([slug, params ?? null, buyer ?? null, buyer_email ?? null, buyer_wallet ?? null])
}

/** The order's Idempotency-Key, when the request sent one (400 when it is not a valid key). */
function idempotencyKeyOf(request: Request): string | null {
  const key = request.headers.get('idempotency-key')
  return key === null ? null : parseIdempotencyKey(key)
}

/** The request with another credential in its Authorization header (an order's first credential, sent again). */
function withAuthorization(request: Request, authorization: string): Request {
  const headers = new Headers(request.headers)
  headers.set('authorization', authorization)
  return new Request(request.url, { method: request.method, headers })
}

/**
 * The credential an MPP order pays with: the one sent, or (see earlierMppCredential) the order's first credential
 * when its payer sent one that paid it or may still be mined, in a copy of the request (`paying`); with the claims
 * to take for a credential sent anew. A new credential is never broadcast in place of such a first one.
 */
async function credentialOfOrder(
  context: ActionContext<TaskStore & KvStore>,
  mpp: MppCharger,
  order: MppOrderKey,
  request: Request,
  agentName: string,
) {
  const authorization = request.headers.get('authorization')
  const transfer = await signedTransferOf(authorization)
  const read = transfer ? await earlierMppCredential(context, mpp, order, transfer, agentName) : null
  if (read && 'earlier' in read) {
    const { earlier } = read
    const paying = withAuthorization(request, earlier.authorization)
    return {
      used: earlier.authorization,
      paying,
      reference: earlier.reference,
      earlier,
      claims: null,
      signed: true,
    }
  }
  const claims = read && transfer && authorization ? { seen: read.claims, transfer, authorization } : null
  // A signed transfer's reference is its hash, already taken: the credential is not parsed again.
  const reference = transfer?.reference ?? (await paymentReferenceOf(authorization))
  return { used: authorization, paying: request, reference, earlier: null, claims, signed: transfer !== null }
}

/**
 * 503 for a credential whose charge failed with nothing sent or claimed, saying what its client does: a signed
 * transfer (pull) was not broadcast; a hash (push) names a transaction the network has not shown mined (or could not
 * be asked about): the same credential is sent again, no new payment.
 */
function notChargedYet(signed: boolean, reference: Hex, cause: unknown): ChainUnavailableError {
  const detail = signed
    ? 'The MPP network cannot be reached right now; nothing was sent and nothing changed. Retry with the same credential after Retry-After.'
    : `Transaction ${reference} is not mined yet, or the MPP network cannot be reached right now; nothing changed. Send the same request with the same credential (the same transaction hash) after Retry-After, before its challenge expires: it pays the order once the transaction is mined. Do not send a new payment.`
  return new ChainUnavailableError(detail, { cause })
}

/**
 * The payment a credential (`used`, its transfer `reference`) already made for this order, as the chain shows it: its
 * replay marker is there (MppCharger.spent), or, for a credential the market does not broadcast (`signed` false: a
 * hash), a task records it, since such a payment's claim is its task (withTaskClaim). Null otherwise.
 */
async function spentBefore(
  { store }: ActionContext<TaskStore>,
  mpp: MppCharger,
  used: string,
  reference: Hex,
  charge: ChargeRequest,
  signed: boolean,
): Promise<Hex | null> {
  const marked = await mpp.spent(used, reference, charge)
  if (marked || signed || (await store.findTaskIdByTxHash(reference)) === null) return marked
  return mpp.minedFor(used, reference, charge)
}

/** The outcome of a payment recovered after a crash: paid, its receipt stamped on the answer. */
async function recoveredOutcome(mpp: MppCharger, reference: Hex, at: Date): Promise<ChargeOutcome> {
  const header = await mpp.receiptHeader(reference, at)
  return {
    paid: true,
    reference,
    withReceipt(response) {
      response.headers.set('payment-receipt', header)
      return response
    },
  }
}

/**
 * The outcome of a hash credential that mppx refused: when its transfer was mined for this order, as its challenge
 * asked, before that challenge expired (MppCharger.paidBeforeExpiry), the payment is recovered, so that a first answer
 * lost (a 503 "not mined yet", a failed task commit) or a price changed since leaves no buyer charged and unserved;
 * the task's insert then claims the transfer once. Any other outcome as it was.
 */
async function paidInTime(
  mpp: MppCharger,
  outcome: ChargeOutcome,
  paid: { used: string | null; reference: Hex | null; signed: boolean; charge: ChargeRequest },
  at: Date,
): Promise<ChargeOutcome> {
  const { used, reference, signed, charge } = paid
  if (outcome.paid || signed || !used || !reference) return outcome
  // A chain that cannot be read is no refusal: 503, and the same credential may come again.
  const late = await mpp.paidBeforeExpiry(used, reference, charge).catch((error: unknown) => {
    throw new ChainUnavailableError(undefined, { cause: error })
  })
  return late ? recoveredOutcome(mpp, late, at) : outcome
}

/** The task a verified payment already paid for this agent, answered again (a retry after a lost answer). */
async function alreadyPaid(
  { store, config }: ActionContext<TaskStore>,
  agent: AgentRecord,
  reference: string,
): Promise<Response | null> {
  const id = await store.findTaskIdByTxHash(reference)
  const task = id ? await store.getTask(agent.name, id) : null
  if (!task) return null
  return Response.json(toTaskView(task, config), {
    status: 200,
    headers: { 'idempotent-replayed': 'true' },
  })
}

/** Marks a held order paid by its machine payment; any other outcome gives the hold back. */
async function payHeld(
  context: ActionContext<TaskStore>,
  task: TaskRecord,
  payment: TaskPayment,
): Promise<{ outcome: 'inserted' | 'not_paid' }> {
  const marked = await context.store.markTaskPaid(task.id, payment, [
    feedEvents.taskPaid(task, payment.txHash, payment.at),
  ])
  if (marked === 'paid') return { outcome: 'inserted' }
  await releaseHold(context, task)
  return { outcome: 'not_paid' }
}

/**
 * True for an order that carries no payment (neither Authorization nor PAYMENT-SIGNATURE) and names no buyer (no budget
 * is read): it is answered by its 402 challenge or a refusal and reaches no chain; it writes only when its skill is
 * free, and that order opens the request's scopes itself (see `orderWithPayment`).
 */
export function withoutPayment(headers: Headers, body: Record<string, unknown> | undefined): boolean {
  return (
    headers.get('authorization') === null &&
    headers.get(X402_HEADERS.signature) === null &&
    body?.buyer === undefined
  )
}

/**
 * What a 402 offers for one paid skill: the MPP challenge's description and scope, and x402's PAYMENT-REQUIRED offer
 * (null when the market takes no x402). Nothing in it depends on the request, so it is made once per seller as read.
 */
type PaidOffer = { description: string; scope: string; x402Header: Promise<string> | null }

/** A seller as the order reads it, with the offers made of its skills. */
type Seller = { agent: AgentRecord; offers: Map<string, PaidOffer> }

/** The offer of `task`'s skill (a paid one, whose seller has a wallet: newTaskRecord refused any other). */
function paidOffer(context: ActionPorts, task: TaskRecord): PaidOffer {
  const { x402 } = context
  let x402Header: Promise<string> | null = null
  if (x402) {
    const { requirements, resource } = x402Offer(context, x402, task)
    x402Header = paymentRequiredHeader(requirements, resource)
    // A header that failed is made again by the next order (offerOf drops it).
    x402Header.catch(() => {})
  }
  return {
    description: `${task.skillName} by ${task.agentName}: ${formatAmount(task.priceBaseUnits)} USDC.e`,
    scope: `${task.agentName.toLowerCase()}/${task.skillSlug}`,
    x402Header,
  }
}

/** `seller`'s offer of `task`'s skill, made the first time it is asked for. */
function offerOf(context: ActionPorts, seller: Seller, task: TaskRecord): PaidOffer {
  const kept = seller.offers.get(task.skillSlug)
  if (kept) return kept
  const offer = paidOffer(context, task)
  seller.offers.set(task.skillSlug, offer)
  offer.x402Header?.catch(() => seller.offers.delete(task.skillSlug))
  return offer
}

/** The MPP challenge with x402's offer of the same order beside it: one 402, either protocol pays. */
async function withX402Offer(offer: PaidOffer, challenge: Response): Promise<Response> {
  if (offer.x402Header) challenge.headers.set(X402_HEADERS.required, await offer.x402Header)
  return challenge
}

/** The 402 of a market that takes x402 alone: a payment_required problem with the PAYMENT-REQUIRED offer. */
async function x402Challenge(
  context: ActionPorts,
  x402: X402Settings,
  task: TaskRecord,
  request: Request,
): Promise<Response> {
  const { resource } = x402Offer(context, x402, task)
  const error = new MarketError(
    'payment_required',
    402,
    'Payment required',
    `${resource.description}: pay the PAYMENT-REQUIRED offer (x402) and send the same request with PAYMENT-SIGNATURE.`,
  )
  return x402Problem(context, x402, task, request, error)
}

/** The `orderWithPayment` action (SPEC row 12). */
export function orderWithPaymentAction(
  context: ActionContext<AgentStore & TaskStore & KvStore & StoreLifecycle>,
) {
  const { store, config, clock, feed } = context
  const sellers = readCache<Seller>()
  // Names no agent has, by the change version they were read under, kept apart from the sellers so that a flood of
  // random names never evicts one; the oldest goes first.
  const absent = new Map<string, string>()
  const keepAbsent = (key: string, version: string) => {
    absent.delete(key)
    absent.set(key, version)
    if (absent.size > READ_CACHE_ENTRIES) absent.delete(absent.keys().next().value as string)
  }
  /**
   * The seller: for a challenge (no money moves) from the read cache, kept until the store changes, as public reads
   * are (a name no agent has too: a 404 repeated reads nothing until the store changes); for a credential read
   * afresh, so the price and wallet it is checked against are the stored ones.
   */
  const sellerOf = async (name: string, credential: boolean): Promise<Seller> => {
    if (credential) return { agent: await requireAgent(context, name), offers: new Map() }
    const key = nameKey(name)
    // Read before the store is: a registration racing the read leaves the miss under an older version.
    const version = await store.changeVersion?.()
    if (version !== undefined && absent.get(key) === version) throw agentNotFound(name)
    return sellers.read(key, version, clock.now(), async () => {
      const agent = await store.getAgent(name)
      if (agent) return { value: { agent, offers: new Map() }, validUntil: Number.POSITIVE_INFINITY }
      if (version !== undefined) keepAbsent(key, version)
      throw agentNotFound(name)
    })
  }
  /**
   * Orders a purchasable skill paid by machine payment (SPEC row 12): 402 with a challenge bound to the agent, the
   * skill and the body; with a valid `Authorization: Payment` credential, 201 with the task `paid` and a
   * Payment-Receipt. A credential pays once; a retry with it answers the task it paid for. MPP is HTTP (its
   * challenge and receipt are headers), so this action takes and answers web Request and Response.
   */
  return async function orderWithPayment(
    agentName: string,
    slug: string,
    body: unknown,
    request: Request,
  ): Promise<Response> {
    const input = parseInput(PaidOrderInput, body)
    const authorization = request.headers.get('authorization')
    const x402Payment = request.headers.get(X402_HEADERS.signature)
    const seller = await sellerOf(agentName, authorization !== null || x402Payment !== null)
    const { agent } = seller
    const skill = agent.skills.find((candidate) => candidate.slug === slug.toLowerCase())
    if (!skill)
      throw new NotFoundError('skill_not_found', `"${agent.name}" has no skill with slug "${slug}".`)
    const task = newTaskRecord(context, agent, { ...input, skill: skill.slug })
    const guard = await orderGuard(context, agent, task, buyerKeyOf(request.headers))
    if (task.status === 'paid') {
      // An order without a payment runs outside the request's scopes (the row's `scopeFree`, withoutPayment): this
      // one writes, so it opens them; inside scopes already open, both run `work` as it is.
      return inChainBudget(config.chain.requestBudgetMs, () =>
        inWriteScope(async () => {
          await insertOrder(context, task, eventsOfNewTask(task), guard)
          feed.nudge()
          return Response.json(toTaskView(task, config), { status: 201 })
        }),
      )
    }
    const { x402 } = context
    const credential = isPaymentCredential(authorization)
    // Before a challenge or an x402 authorization is spent, an order the budget's day has no room for is refused.
    if (!credential) await refuseIfDaySpent(context, task, guard)
    if (x402Payment !== null && x402) {
      const order = { key: idempotencyKeyOf(request), fingerprint: hashSecret(orderText(skill.slug, input)) }
      return orderWithX402(context, x402, task, request, x402Payment, guard, order)
    }
    // A client whose Accept-Payment refuses MPP's tempo charge gets x402's offer alone, when there is one.
    const mppRefused = !acceptsPayment(request.headers.get('accept-payment'), 'tempo', 'charge')
    if (!context.mpp || (mppRefused && x402 && !credential)) {
      if (x402 && !credential) return x402Challenge(context, x402, task, request)
      throw new MarketError(
        'mpp_unavailable',
        503,
        'Machine payments unavailable',
        'This marketplace takes no machine payments.',
      )
    }
    const offer = offerOf(context, seller, task)
    const charge = {
      amountBaseUnits: task.priceBaseUnits,
      // newTaskRecord refused a paid order of a seller without a wallet, so payTo is set.
      recipient: task.payTo ?? '0x0000000000000000000000000000000000000000',
      description: offer.description,
      scope: offer.scope,
      bodyDigest: await context.mpp.bodyDigest(orderText(skill.slug, input)),
    }
    const mpp = context.mpp
    // No Authorization header: no credential to read, claim, settle or recover, so nothing is paid, held or claimed
    // (mppx reads a credential from that header alone); the answer is the challenge.
    if (authorization === null) {
      return withX402Offer(offer, await mpp.challenge(charge))
    }
    const order = { key: idempotencyKeyOf(request), fingerprint: hashSecret(orderText(skill.slug, input)) }
    const { used, paying, reference, earlier, claims, signed } = await credentialOfOrder(
      context,
      mpp,
      order,
      request,
      agent.name,
    )
    // Nothing about a task is answered before the credential is ours, for this order, and its settlement's memo
    // binds its challenge: a transaction hash alone (public) opens nothing.
    const spent =
      used && reference
        ? earlier
          ? await mpp.minedFor(used, reference, charge)
          : await spentBefore(context, mpp, used, reference, charge, signed)
        : null
    // A budgeted buyer's order holds its price (stored awaiting payment, within the day's cap) before the payment is
    // taken, so that racing orders never take more than the budget.
    const held = guard !== null && credential && !spent
    if (held) await insertOrder(context, task, eventsOfNewTask(task), guard)
    // The order's claims are taken in the broadcast's own replay-claim write (one store transaction), once the
    // credential is checked and its transfer simulated: a racing credential of the same order finds them taken.
    const claiming =
      claims && !spent
        ? mppOrderClaims(context, claims.seen, order, claims.transfer, claims.authorization)
        : null
    const claimed = claiming?.claimed ?? []
    // Every payment taken here is recorded as a task, whose insert claims its transfer in the task's commit.
    const settle = () => withTaskClaim(() => mpp.charge(paying, charge))
    // A charge that throws may have moved the money: its hold stays until the order expires.
    const charged = spent
      ? await recoveredOutcome(mpp, spent, clock.now())
      : await (claiming ? withClaimTogether(claiming.take, settle) : settle()).catch(
          async (error: unknown) => {
            // The broadcast (or the network's answer to it) failed: the chain says whether the money moved.
            if (!used || !reference) throw error
            const found = await mpp.afterFailedCharge(used, reference, charge)
            if (found === 'unsent') {
              await releaseMppOrder(context, claimed)
              throw notChargedYet(signed, reference, error)
            }
            if (found === 'unknown') throw new PaymentOutcomeUnknownError(reference, { cause: error })
            return recoveredOutcome(mpp, found, clock.now())
          },
        )
    const outcome = await paidInTime(mpp, charged, { used, reference, signed, charge }, clock.now())
    if (!outcome.paid) {
      if (held) await releaseHold(context, task)
      await releaseMppOrder(context, claimed)
      if (claiming?.conflict) throw paymentInProgress()
      return withX402Offer(offer, outcome.challenge)
    }
    const replayed = spent ? await alreadyPaid(context, agent, spent) : null
    if (replayed) return outcome.withReceipt(replayed)
    const payment = {
      method: 'mpp' as const,
      txHash: outcome.reference,
      escrowTaskId: null,
      amountBaseUnits: task.priceBaseUnits,
      from: null,
      at: clock.now(),
    }
    const stored = held ? await payHeld(context, task, payment) : null
    Object.assign(task, { status: 'paid', payment })
    // A payment taken (or recovered) is recorded whatever the budget says now: its money has moved.
    const inserted = stored ?? (await store.insertTask(task, eventsOfNewTask(task)))
    if (inserted.outcome !== 'inserted') {
      const existing = await alreadyPaid(context, agent, outcome.reference)
      if (existing) return outcome.withReceipt(existing)
      throw CLAIM_CONFLICTS.tx_already_used()
    }
    feed.nudge()
    return outcome.withReceipt(Response.json(toTaskView(task, config), { status: 201 }))
  }
}
