import * as v from 'valibot'
import type { Address, Hex } from 'viem'
import type { AgentRecord } from '../Agent.ts'
import { hashSecret } from '../Credentials.ts'
import {
  ChainUnavailableError,
  ConflictError,
  InvalidInputError,
  MarketError,
  NotFoundError,
  PaymentRefusedError,
} from '../errors.ts'
import { feedEvents } from '../events.ts'
import { formatAmount } from '../Money.ts'
import { type ChargeOutcome, type MppCharger, paymentReferenceOf } from '../payments/Mpp.ts'
import { isPayerProof } from '../payments/PayerProof.ts'
import { type PaymentCheck, type RefusalReason, type Verdict, verifyPayments } from '../payments/Verifier.ts'
import { addressBucket } from '../RateLimit.ts'
import { readCache } from '../ReadCache.ts'
import {
  CompleteTaskInput,
  CreateTaskInput,
  EXPIRED_TASK_RETENTION_MS,
  IdempotencyKey,
  type IdempotentAnswer,
  MAX_RECHECKS,
  MAX_RECHECKS_PER_CLIENT,
  MAX_UNMINED_RECHECKS,
  PaidOrderInput,
  type PublicTaskRow,
  recheckDelayMs,
  type SellerTaskView,
  TASK_STATUSES,
  TaskListInput,
  type TaskPayment,
  type TaskRecord,
  type TaskView,
  taskAt,
  toPublicTaskRow,
  toSellerTaskView,
  toTaskView,
  VerifyPaymentInput,
} from '../Task.ts'
import { pageNumber, parseInput } from '../Validation.ts'
import { type ActionContext, authenticate, requireAgent } from './context.ts'
import { eventsOfNewTask, newTaskRecord } from './newTask.ts'

/** An HTTP-shaped answer: hosts send `body` with `status`, and `Retry-After` when `retryAfterSeconds` is set. */
export type TaskAnswer = {
  status: number
  body: unknown
  retryAfterSeconds?: number
  /** True when this is the stored first answer to an earlier request with the same Idempotency-Key. */
  replayed?: boolean
}

/** The body of a 202: the payment is not final yet. */
export type PendingVerification = {
  verified: false
  state: 'pending'
  confirmations: number
  required: number
}

/** One page of an agent's tasks: public history rows, or the seller's own full tasks. */
export type TaskPage = {
  tasks: PublicTaskRow[] | SellerTaskView[]
  total: number
  limit: number
  offset: number
}

/** One purchasable skill an agent sells by machine payment: one paid operation of the OpenAPI document. */
export type PaidOffer = {
  agent: string
  slug: string
  name: string
  description: string | null
  amountBaseUnits: bigint
  currency: string
}

/** One page of paid offers, and the cursor of the next (null at the end). */
export type PaidOfferPage = { offers: PaidOffer[]; next: string | null }

/** Query of a page of paid offers: `limit` 1-100, `after` the `next` cursor of the page before. */
export const PaidOfferQuery = v.object({
  limit: v.optional(pageNumber(1, 100)),
  after: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.regex(/^[a-z0-9_-]{2,50}\/[a-z0-9-]{1,64}$/, 'must be the `next` cursor of a page: agent/slug'),
    ),
  ),
})

/** What one background pass did. */
export type RecheckReport = {
  checked: number
  paid: number
  refused: number
  stillPending: number
  /** Why the chain could not be read this pass (the checks wait for the next); the host logs it. */
  failure?: unknown
}

/** Who orders: the host's name for the client (its address), which scopes Idempotency-Keys and re-check budgets. */
export type OrderOptions = { idempotencyKey?: string | null; client?: string | null }

// Base makes a block about every 2 seconds; Retry-After estimates when the missing confirmations arrive.
const BLOCK_SECONDS = 2

const REFUSAL_DETAILS: Record<RefusalReason, string> = {
  reverted: 'The transaction reverted on chain; it moved no USDC.',
  wrong_token: 'The transaction moved no USDC of the configured USDC contract.',
  wrong_recipient: "The USDC did not go to the seller's wallet shown in payment.to.",
  amount_mismatch: 'The USDC sent is less than the price of the skill.',
  wrong_sender: 'The USDC did not come from the buyer_wallet given when the task was created.',
  not_an_escrow_deposit: 'The transaction touches the escrow contract but is not a funded deposit.',
}

const CLAIM_CONFLICTS = {
  tx_already_used: () => new ConflictError('tx_already_used', 'This transaction already paid another task.'),
  escrow_task_id_used: () =>
    new ConflictError('escrow_task_id_used', 'The escrow deposit of this taskId already paid another task.'),
}

const notPending = (task: TaskRecord) =>
  new ConflictError(
    'task_not_pending',
    `The task is ${task.status}; only a pending_payment task can be paid.`,
  )

const expired = (task: TaskRecord) =>
  new ConflictError(
    'task_expired',
    `The task expired unpaid at ${task.expiresAt?.toISOString()}; order again to get a new task.`,
  )

const SIGNATURE_HOW =
  'Sign the EIP-712 typed data in payment.payer_proof (the task\'s, or commerce.payer_proof of the agent card when paying before ordering, with task "") with the wallet that paid, message.txHash set to your transaction hash, and send it as payer_signature.'

const signatureRequired = () =>
  new InvalidInputError(
    'payer_signature_required',
    `A payment needs payer_signature: proof by the paying wallet that this payment is for this task. ${SIGNATURE_HOW}`,
    [
      {
        pointer: '/payer_signature',
        detail: 'required with tx_hash: an EIP-712 signature by the paying wallet',
      },
    ],
  )

const signatureInvalid = (from: string) =>
  new PaymentRefusedError(
    'payer_signature_invalid',
    `payer_signature is not a signature of this task's payer_proof by ${from}, the wallet that paid. ${SIGNATURE_HOW}`,
  )

/** A digest naming the client, never the address itself; '' when the host names none. */
// By the client's rate-limit bucket (an IPv6 address by its /64): rotating the low bits of one network is one client.
const clientKeyOf = (client: string | null | undefined) =>
  client ? hashSecret(`client:${addressBucket(client)}`) : ''

/** Orders, payments, delivery and the task lists. */
export function taskActions(context: ActionContext) {
  const { store, config, clock, feed } = context

  const requireTask = async (agent: AgentRecord, id: string): Promise<TaskRecord> => {
    const task = await store.getTask(agent.name, id)
    if (!task) throw new NotFoundError('task_not_found', `"${agent.name}" has no task "${id}".`)
    return taskAt(task, clock.now())
  }

  const checkOf = (task: TaskRecord, txHash: Hex): PaymentCheck => ({
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
    },
  })

  /** Verdicts from the chain, or a 503 when it cannot be read. */
  const judge = async (checks: PaymentCheck[]): Promise<Verdict[]> => {
    if (!context.chain) throw new ChainUnavailableError('This marketplace has no payment chain configured.')
    try {
      return await verifyPayments(context.chain, checks)
    } catch (error) {
      if (error instanceof ChainUnavailableError) throw error
      // Not a refusal the rules made: the client gets a 503, the host logs what failed.
      throw new ChainUnavailableError(undefined, { cause: error })
    }
  }

  const paymentOf = (verdict: Extract<Verdict, { ok: true }>, txHash: Hex): TaskPayment => ({
    method: verdict.escrowTaskId ? 'escrow' : 'transfer',
    txHash,
    escrowTaskId: verdict.escrowTaskId ?? null,
    amountBaseUnits: verdict.amount,
    from: verdict.from,
    at: clock.now(),
  })

  const pendingAnswer = (verdict: { confirmations: number; required: number }) => ({
    verification: {
      verified: false,
      state: 'pending',
      confirmations: verdict.confirmations,
      required: verdict.required,
    } satisfies PendingVerification,
    retryAfterSeconds: Math.max(1, (verdict.required - verdict.confirmations) * BLOCK_SECONDS),
  })

  const refusal = (reason: RefusalReason) => new PaymentRefusedError(reason, REFUSAL_DETAILS[reason])

  const replay = (answer: IdempotentAnswer, fingerprint: string): TaskAnswer => {
    if (answer.fingerprint !== fingerprint) {
      throw new ConflictError(
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request body.',
      )
    }
    return { status: answer.status, body: answer.body, replayed: true }
  }

  const newTask = (agent: AgentRecord, input: CreateTaskInput) => newTaskRecord(context, agent, input)

  /** The payer's proof for `task` (`forOrder`: signed before the task existed, with task ''), judged by `from`. */
  const payerProved = async (
    task: TaskRecord,
    txHash: Hex,
    signature: Hex,
    from: Address,
    forOrder: boolean,
  ) => {
    if (!context.chain) throw new ChainUnavailableError('This marketplace has no payment chain configured.')
    const claim = { market: config.baseUrl, agent: task.agentName, task: forOrder ? '' : task.id, txHash }
    try {
      return await isPayerProof(context.chain, from, config.chain.chainId, claim, signature)
    } catch (error) {
      // A wallet contract that reverts or answers garbage has not signed; an unreachable chain is a 503.
      if (error instanceof ChainUnavailableError) throw error
      return false
    }
  }

  /**
   * Applies a tx hash sent with the order: paid at once, pending (re-checked in the background within the client's
   * budget), or refused. The payer proves with `signature` that it pays this order.
   */
  const payAtCreation = async (task: TaskRecord, txHash: Hex, signature: Hex): Promise<TaskAnswer> => {
    if (await store.findTaskIdByTxHash(txHash)) throw CLAIM_CONFLICTS.tx_already_used()
    const [verdict] = await judge([checkOf(task, txHash)])
    if (!verdict) throw new ChainUnavailableError()
    if (verdict.ok) {
      if (!(await payerProved(task, txHash, signature, verdict.from, true)))
        throw signatureInvalid(verdict.from)
      task.status = 'paid'
      task.payment = paymentOf(verdict, txHash)
      return { status: 201, body: toTaskView(task, config) }
    }
    if (verdict.reason !== 'pending') throw refusal(verdict.reason)
    const now = clock.now()
    const rechecked = await withinRecheckBudget(task.clientKey)
    if (rechecked)
      task.pendingCheck = {
        txHash,
        signature,
        attempts: 0,
        nextAt: new Date(now.getTime() + recheckDelayMs(0)),
      }
    const { verification, retryAfterSeconds } = pendingAnswer(verdict)
    const body = { ...toTaskView(task, config), verification: { ...verification, rechecked } }
    return { status: 202, body, retryAfterSeconds }
  }

  const offerPages = readCache<PaidOfferPage>()

  /** False when the client already has as many background re-checks as it may (clients named by the host only). */
  const withinRecheckBudget = async (clientKey: string) =>
    clientKey === '' || (await store.countPendingChecks(clientKey)) < MAX_RECHECKS_PER_CLIENT

  /** The task a verified payment already paid for this agent, answered again (a retry after a lost answer). */
  const alreadyPaid = async (agent: AgentRecord, reference: string): Promise<Response | null> => {
    const id = await store.findTaskIdByTxHash(reference)
    const task = id ? await store.getTask(agent.name, id) : null
    if (!task) return null
    return Response.json(toTaskView(task, config), {
      status: 200,
      headers: { 'idempotent-replayed': 'true' },
    })
  }

  return {
    /**
     * A page of what row 12 sells (purchasable skills of agents with a wallet, when machine payments are on), by
     * agent and slug: at most `limit` (1-100, default 100) after the cursor `after`; `next` is the cursor of the page
     * after this one, null at the end. Cost is one page, whatever the market's size.
     * @example const { offers, next } = await market.paidOffers({ limit: 50 })
     */
    async paidOffers(query: unknown = {}): Promise<PaidOfferPage> {
      const { limit = 100, after } = parseInput(PaidOfferQuery, query, 'invalid_query')
      const mpp = context.mpp
      if (!mpp) return { offers: [], next: null }
      // Offers change only with agents and skills: the page is kept under the store's change version, so an unchanged
      // page is the same object (hosts serialize it once).
      return offerPages.read(
        `${limit}/${after ?? ''}`,
        await store.changeVersion?.(),
        clock.now(),
        async () => {
          const [agentKey = '', slug = ''] = after ? after.split('/') : []
          const rows = await store.listPaidOffers(after ? { agentKey, slug } : null, limit + 1)
          const offers = rows
            .slice(0, limit)
            .map(({ agentKey: _key, ...offer }) => ({ ...offer, currency: mpp.currency }))
          const last = rows[limit - 1]
          const next = rows.length > limit && last ? `${last.agentKey}/${last.slug}` : null
          return { value: { offers, next }, validUntil: Number.POSITIVE_INFINITY }
        },
      )
    },

    /**
     * Orders a purchasable skill paid by machine payment (SPEC row 12): 402 with a challenge bound to the agent, the
     * skill and the body; with a valid `Authorization: Payment` credential, 201 with the task `paid` and a
     * Payment-Receipt. A credential pays once; a retry with it answers the task it paid for.
     */
    async orderWithPayment(
      agentName: string,
      slug: string,
      body: unknown,
      request: Request,
    ): Promise<Response> {
      const input = parseInput(PaidOrderInput, body)
      const agent = await requireAgent(context, agentName)
      const skill = agent.skills.find((candidate) => candidate.slug === slug.toLowerCase())
      if (!skill)
        throw new NotFoundError('skill_not_found', `"${agent.name}" has no skill with slug "${slug}".`)
      const task = newTask(agent, { ...input, skill: skill.slug })
      if (task.status === 'paid') {
        await store.insertTask(task, eventsOfNewTask(task))
        feed.nudge()
        return Response.json(toTaskView(task, config), { status: 201 })
      }
      if (!context.mpp)
        throw new MarketError(
          'mpp_unavailable',
          503,
          'Machine payments unavailable',
          'This marketplace takes no machine payments.',
        )
      const authorization = request.headers.get('authorization')
      const charge = {
        amountBaseUnits: task.priceBaseUnits,
        // newTask refused a paid order of a seller without a wallet, so payTo is set.
        recipient: task.payTo ?? '0x0000000000000000000000000000000000000000',
        description: `${skill.name} by ${agent.name}: ${formatAmount(task.priceBaseUnits)} USDC.e`,
        scope: `${agent.name.toLowerCase()}/${skill.slug}`,
        bodyDigest: orderDigest(skill.slug, input),
      }
      // Nothing about a task is answered before the credential is ours, for this order, and its settlement's memo
      // binds its challenge: a transaction hash alone (public) opens nothing.
      const reference = await paymentReferenceOf(authorization)
      const spent =
        authorization && reference ? await context.mpp.spent(authorization, reference, charge) : null
      const outcome = spent
        ? await recoveredOutcome(context.mpp, spent, clock.now())
        : await context.mpp.charge(request, charge)
      if (!outcome.paid) return outcome.challenge
      const replayed = spent ? await alreadyPaid(agent, spent) : null
      if (replayed) return outcome.withReceipt(replayed)
      task.status = 'paid'
      task.payment = {
        method: 'mpp',
        txHash: outcome.reference,
        escrowTaskId: null,
        amountBaseUnits: task.priceBaseUnits,
        from: null,
        at: clock.now(),
      }
      const stored = await store.insertTask(task, eventsOfNewTask(task))
      if (stored.outcome !== 'inserted') {
        const existing = await alreadyPaid(agent, outcome.reference)
        if (existing) return outcome.withReceipt(existing)
        throw CLAIM_CONFLICTS.tx_already_used()
      }
      feed.nudge()
      return outcome.withReceipt(Response.json(toTaskView(task, config), { status: 201 }))
    },

    /**
     * Orders a skill (SPEC row 8). A free skill's task starts `paid`; with `tx_hash` the payment is verified at
     * once. With an Idempotency-Key, a retry with the same body gets the first answer again.
     * @example const { status, body } = await market.createTask('scout', { skill: 'search' })
     */
    async createTask(agentName: string, body: unknown, options: OrderOptions = {}): Promise<TaskAnswer> {
      const input = parseInput(CreateTaskInput, body)
      const key = options.idempotencyKey ?? null
      if (key !== null) parseIdempotencyKey(key)
      const agent = await requireAgent(context, agentName)
      const fingerprint = hashSecret(JSON.stringify(input))
      const clientKey = clientKeyOf(options.client)
      if (key !== null) {
        const first = await store.findIdempotentAnswer(agent.name, clientKey, key)
        if (first) return replay(first, fingerprint)
      }
      const task = newTaskRecord(context, agent, input, clientKey)
      const paysNow = input.tx_hash && task.status === 'pending_payment'
      if (paysNow && !input.payer_signature) throw signatureRequired()
      const answer =
        input.tx_hash && input.payer_signature && task.status === 'pending_payment'
          ? await payAtCreation(task, input.tx_hash, input.payer_signature)
          : { status: 201, body: toTaskView(task, config) }
      if (key !== null) task.idempotency = { key, fingerprint, status: answer.status, body: answer.body }
      const stored = await store.insertTask(task, eventsOfNewTask(task))
      if (stored.outcome === 'replay') return replay(stored.answer, fingerprint)
      if (stored.outcome !== 'inserted') throw CLAIM_CONFLICTS[stored.outcome]()
      feed.nudge()
      return answer
    },

    /** A task as its buyer reads it (SPEC row 10): knowing the id is the credential. */
    async getTask(agentName: string, id: string): Promise<TaskView> {
      const agent = await requireAgent(context, agentName)
      return toTaskView(await requireTask(agent, id), config)
    },

    /**
     * Verifies the on-chain payment of a task (SPEC row 11): 200 paid, 202 not final yet (nothing changes), 422
     * refused, 409 when the hash paid another task or the task is not awaiting payment, 503 when the chain is down.
     */
    async verifyPayment(agentName: string, id: string, body: unknown): Promise<TaskAnswer> {
      const { tx_hash: txHash, payer_signature: signature } = parseInput(VerifyPaymentInput, body)
      const agent = await requireAgent(context, agentName)
      const task = await requireTask(agent, id)
      if (task.status === 'expired') throw expired(task)
      if (task.status !== 'pending_payment') throw notPending(task)
      if (!signature) throw signatureRequired()
      const usedBy = await store.findTaskIdByTxHash(txHash)
      if (usedBy && usedBy !== task.id) throw CLAIM_CONFLICTS.tx_already_used()
      const [verdict] = await judge([checkOf(task, txHash)])
      if (!verdict) throw new ChainUnavailableError()
      if (!verdict.ok) {
        if (verdict.reason !== 'pending') throw refusal(verdict.reason)
        const { verification, retryAfterSeconds } = pendingAnswer(verdict)
        return { status: 202, body: verification, retryAfterSeconds }
      }
      if (!(await payerProved(task, txHash, signature, verdict.from, false)))
        throw signatureInvalid(verdict.from)
      const payment = paymentOf(verdict, txHash)
      const outcome = await store.markTaskPaid(task.id, payment, [
        feedEvents.taskPaid(task, txHash, payment.at),
      ])
      if (outcome === 'not_pending') {
        const current = await requireTask(agent, id)
        throw current.status === 'expired' ? expired(current) : notPending(current)
      }
      if (outcome !== 'paid') throw CLAIM_CONFLICTS[outcome]()
      feed.nudge()
      const paid = await requireTask(agent, id)
      return { status: 200, body: { verified: true, task: toTaskView(paid, config) } }
    },

    /** Delivers a paid task (seller's key, `{result_url}`): `paid` -> `completed`. */
    async completeTask(
      agentName: string,
      id: string,
      apiKey: string | undefined,
      body: unknown,
    ): Promise<SellerTaskView> {
      const agent = await authenticate(context, agentName, apiKey)
      const { result_url: resultUrl } = parseInput(CompleteTaskInput, body)
      const task = await requireTask(agent, id)
      const now = clock.now()
      const outcome = await store.completeTask(task.id, resultUrl, now, [feedEvents.taskCompleted(task, now)])
      if (outcome === 'not_paid') {
        const current = await requireTask(agent, id)
        throw new ConflictError(
          'task_not_paid',
          `The task is ${current.status}; only a paid task can be completed.`,
        )
      }
      feed.nudge()
      return toSellerTaskView(await requireTask(agent, id), config)
    },

    /**
     * An agent's tasks (SPEC row 9). Without a key: the public history (default `completed`), rows without ids,
     * params, e-mails or results. With the seller's key: its full tasks as a work queue (default `all`, paid first).
     */
    async listTasks(agentName: string, apiKey: string | undefined, query: unknown): Promise<TaskPage> {
      const { status, limit, offset } = parseInput(TaskListInput, query ?? {}, 'invalid_query')
      const seller = apiKey === undefined ? null : await authenticate(context, agentName, apiKey)
      const agent = seller ?? (await requireAgent(context, agentName))
      const wanted = status ?? (seller ? 'all' : 'completed')
      const statuses = wanted === 'all' ? [...TASK_STATUSES] : [wanted]
      const order = seller ? 'work_queue' : 'history'
      const page = await store.listTasks(agent.name, { statuses, order, limit, offset })
      const now = clock.now()
      const current = page.tasks.map((task) => taskAt(task, now))
      const tasks = seller
        ? current.map((task) => toSellerTaskView(task, config))
        : current.map(toPublicTaskRow)
      return { tasks, total: page.total, limit, offset }
    },

    /**
     * One pass of the background re-check: verifies, in one batch, every payment sent at creation whose check is
     * due, and pays, reschedules (bounded back-off) or drops each. Hosts call it on a timer.
     */
    async recheckPendingPayments(limit = 100): Promise<RecheckReport> {
      const due = await store.listDueRechecks(clock.now(), limit)
      const report: RecheckReport = { checked: due.length, paid: 0, refused: 0, stillPending: 0 }
      if (due.length === 0 || !context.chain) return report
      const checks = due.flatMap((task) =>
        task.pendingCheck ? [checkOf(task, task.pendingCheck.txHash)] : [],
      )
      const verdicts = await judge(checks).catch((error: unknown) => {
        report.failure = error
        return null
      })
      for (const [index, task] of due.entries()) {
        const outcome = await settleRecheck(task, verdicts?.[index] ?? null)
        report[outcome] += 1
      }
      if (report.paid > 0) feed.nudge()
      return report
    },

    /**
     * Moves unpaid tasks past their `expires_at` to `expired`, and deletes those expired for longer than the
     * retention (EXPIRED_TASK_RETENTION_MS). Hosts call it on a timer, beside the re-checks.
     */
    async expireUnpaidTasks(limit = 500): Promise<{ expired: number; purged: number }> {
      const now = clock.now()
      return store.expireTasks(now, new Date(now.getTime() - EXPIRED_TASK_RETENTION_MS), limit)
    },
  }

  /** Applies one re-check verdict (null: the chain could not be read) to its task. */
  async function settleRecheck(
    task: TaskRecord,
    verdict: Verdict | null,
  ): Promise<'paid' | 'refused' | 'stillPending'> {
    const check = task.pendingCheck
    if (!check) return 'refused'
    if (verdict?.ok) {
      const proved =
        check.signature !== null &&
        (await payerProved(task, check.txHash, check.signature, verdict.from, true))
      if (!proved) {
        await store.setPendingCheck(task.id, null)
        return 'refused'
      }
      const payment = paymentOf(verdict, check.txHash)
      const outcome = await store.markTaskPaid(task.id, payment, [
        feedEvents.taskPaid(task, check.txHash, payment.at),
      ])
      if (outcome === 'paid') return 'paid'
      await store.setPendingCheck(task.id, null)
      return 'refused'
    }
    if (verdict && verdict.reason !== 'pending') {
      await store.setPendingCheck(task.id, null)
      return 'refused'
    }
    const attempts = check.attempts + 1
    // A hash the chain has never shown mined gets a few minutes, not the whole budget.
    const unmined =
      verdict !== null && !verdict.ok && verdict.reason === 'pending' && verdict.confirmations === 0
    if (attempts >= (unmined ? MAX_UNMINED_RECHECKS : MAX_RECHECKS)) {
      await store.setPendingCheck(task.id, null)
      return 'refused'
    }
    const nextAt = new Date(clock.now().getTime() + recheckDelayMs(attempts))
    await store.setPendingCheck(task.id, { ...check, attempts, nextAt })
    return 'stillPending'
  }
}

/** Checks an Idempotency-Key header, or throws a 400 naming it. */
function parseIdempotencyKey(key: string): string {
  try {
    return parseInput(IdempotencyKey, key)
  } catch {
    throw new InvalidInputError(
      'invalid_idempotency_key',
      'The Idempotency-Key header must be 1-255 visible ASCII characters.',
      [{ pointer: '', detail: 'Idempotency-Key must be 1-255 visible ASCII characters' }],
    )
  }
}

/** A digest of what an order asks for, in a fixed field order, so row 8 and row 12 bodies of one order agree. */
function orderDigest(slug: string, input: PaidOrderInput): string {
  const { params, buyer, buyer_email, buyer_wallet } = input
  return hashSecret(
    JSON.stringify([slug, params ?? null, buyer ?? null, buyer_email ?? null, buyer_wallet ?? null]),
  )
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
