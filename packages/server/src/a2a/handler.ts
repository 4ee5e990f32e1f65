import {
  type AgentCard,
  type ListTasksRequest,
  ListTasksResponse,
  Message,
  type SendMessageRequest,
  Task,
  taskStateToJSON,
} from '@a2a-js/sdk'
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors'
import type { A2ARequestHandler } from '@a2a-js/sdk/server'
import {
  hashSecret,
  inChainBudget,
  MARKET_SKILLS,
  MAX_PARAMS_DEPTH,
  MarketError,
  type MarketplaceActions,
  nestsDeeperThan,
  type TaskView,
  type ThreadTask,
} from '@agentmarket/core'
import { exampleParams } from '../web/exampleParams.ts'
import { A2A_PAGE_MAX, a2aPageSize } from './methods.ts'
import { A2A_X402, a2aStateOf, a2aTaskOf } from './taskMapping.ts'

type A2aMessage = NonNullable<SendMessageRequest['message']>
/** A write under a key, as `market.idempotent` takes it. */
type IdempotentRequest = Parameters<MarketplaceActions['idempotent']>[0]

/** A task ListTasks looks at, not read yet: its seller, its id and the contextId it is shown under. */
type ListedEntry = ThreadTask & { contextId: string }
/** A task ListTasks read, with the contextId it is shown under. */
type ListedView = { view: TaskView; contextId: string }
/** One page of ListTasks before it is made into A2A tasks, and how many tasks match in all. */
type ListedPage = { shown: ListedView[]; total: number }

/** A task of the seller's queue: the queue presents the seller's key, not its buyers' conversations. */
const underOwnId = (view: TaskView): ListedView => ({ view, contextId: view.task_id })

/** The text of a message that names no order (no data part, no skill in metadata); null when it names one or has none. */
function plainTextOf(message: A2aMessage): string | null {
  const contents = message.parts.map((part) => part.content)
  if (contents.some((content) => content?.$case === 'data') || typeof message.metadata?.skill === 'string')
    return null
  const texts = contents.flatMap((content) => (content?.$case === 'text' ? [content.value] : []))
  return texts.length > 0 ? texts.join('\n').trim() : null
}

/** The order a message asks for: a DataPart `{skill, params, …}`, or the skill in metadata and params as the data. */
function orderOf(message: A2aMessage): Record<string, unknown> {
  const data = message.parts.map((part) => part.content).find((content) => content?.$case === 'data')?.value
  const fields = typeof data === 'object' && data !== null && !Array.isArray(data) ? { ...data } : {}
  const named = message.metadata?.skill
  if (typeof named === 'string' && !('skill' in fields)) return { skill: named, params: fields }
  if (typeof fields.skill !== 'string')
    throw new RequestMalformedError(
      'Send a data part {"skill": "<skill id>", "params": {…}} (or name the skill in message metadata "skill"); the agent card lists the skill ids.',
    )
  return fields
}

/**
 * A dependency fault (the database or the chain unavailable, an unknown outcome) as A2A shows it: the binding's
 * internal error (JSON-RPC -32603), and over HTTP+JSON 503 UNAVAILABLE with Retry-After, never a malformed request,
 * which a client would not retry.
 */
export class A2aUnavailableError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message)
  }
}

/**
 * A marketplace problem as an A2A error: unknown tasks are TaskNotFound, dependency faults A2aUnavailableError, the
 * rest malformed requests saying why.
 */
function a2aErrorOf(error: unknown): unknown {
  if (!(error instanceof MarketError)) return error
  if (error.code === 'task_not_found') return new TaskNotFoundError(error.message)
  if (error.status >= 500) {
    const retryAfter = (error as { retryAfterSeconds?: number }).retryAfterSeconds ?? 2
    return new A2aUnavailableError(`${error.code}: ${error.message}`, retryAfter)
  }
  return new RequestMalformedError(`${error.code}: ${error.message}`)
}

/**
 * Who sends a message, as retries are told apart: the caller's scope, who is charged for its kept answers (the
 * idempotency quota), and the Idempotency-Key header if sent.
 */
export type A2aCaller = {
  scope: string
  owners?: IdempotentRequest['owners']
  idempotencyKey: string | null
}

/** What a retry of a message hears when the first one with its messageId is not replayed, in A2A's words. */
const RETRY_REFUSALS: Record<string, string> = {
  idempotency_key_reused:
    'This messageId (or Idempotency-Key) was already sent with a different message: a new message needs a new messageId.',
  idempotency_key_in_use:
    'The first message with this messageId is still being handled: retry the same message shortly to get its task.',
  idempotency_outcome_unknown:
    'The first message with this messageId ended without an answer (the server or its database failed under it), so whether its order landed is unknown; it is not run again under this messageId. List your conversation (ListTasks with its contextId) to see it; send a new messageId to order again.',
}

/** A refusal of a retried message as an A2A error (the code first, as other refusals), or the error as it was. */
function retryErrorOf(error: unknown): unknown {
  if (!(error instanceof MarketError) || !(error.code in RETRY_REFUSALS)) return error
  return new RequestMalformedError(`${error.code}: ${RETRY_REFUSALS[error.code]}`)
}

/** The x402 extension's error code for a refusal reason (a2a-x402 v0.2's list). */
function x402ErrorCode(reason: string): string {
  if (/signature/.test(reason)) return 'INVALID_SIGNATURE'
  if (/valid_before|valid_after|expired/.test(reason)) return 'EXPIRED_PAYMENT'
  if (/nonce/.test(reason)) return 'DUPLICATE_NONCE'
  if (/balance/.test(reason)) return 'INSUFFICIENT_FUNDS'
  if (/network/.test(reason)) return 'NETWORK_MISMATCH'
  if (/value|amount|requirements_mismatch|recipient/.test(reason)) return 'INVALID_AMOUNT'
  return 'SETTLEMENT_FAILED'
}

/**
 * The A2A operations of one agent (or, `agent` null, of the marketplace's own agent), over the marketplace's
 * actions: SendMessage orders a skill (or pays an order under the a2a-x402 extension), GetTask and ListTasks read
 * orders, as A2A tasks. The SDK's transport handlers speak the protocol around it. No streaming, no push, no
 * cancelling (the card says so): those answer UnsupportedOperation-type errors. A conversation's id (contextId) is
 * shown only to a request that presented it; where a request presents only a task id, the task id stands in
 * (`methods.ts` says who may call each operation).
 */
export class MarketA2aHandler implements A2ARequestHandler {
  constructor(
    private readonly market: MarketplaceActions,
    private readonly agent: string | null,
    private readonly card: AgentCard,
    /** The seller's API key when the request carries one (ListTasks without a context lists its queue). */
    private readonly apiKey: string | undefined,
    /** Who sends: a retried message (same messageId, or Idempotency-Key) is answered once per caller. */
    private readonly caller: A2aCaller = { scope: '', idempotencyKey: null },
  ) {}

  async getAgentCard() {
    return this.card
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError('This agent has no extended card.')
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const message = params.message
    if (!message) throw new RequestMalformedError('SendMessage needs a message.')
    try {
      // One chain budget for the message, as for an HTTP request (a payment's chain calls share it).
      return await inChainBudget(this.market.config.chain.requestBudgetMs, () =>
        message.taskId ? this.continueTask(message) : this.once(message, () => this.newMessage(message)),
      )
    } catch (error) {
      throw a2aErrorOf(retryErrorOf(error))
    }
  }

  /** A message outside a task: an order (a task) or a question to the marketplace's agent (a message). */
  private newMessage(message: A2aMessage): Promise<Message | Task> {
    // Most A2A clients open with plain text: they are answered how to order (and, on the market's interface, what
    // the text finds), never a bare "invalid params".
    const text = plainTextOf(message)
    if (text !== null) return this.guide(text, message.contextId)
    const order = orderOf(message)
    if (this.agent !== null) return this.order(this.agent, order, message.contextId)
    return this.marketSkill(order, message.contextId)
  }

  /**
   * Runs a new message once per caller and messageId (`market.idempotent`, as Idempotency-Key on the HTTP API): the
   * task it created is kept for 24 hours and a retry gets that first answer, never a second order. Answers that
   * created nothing (a search, a read) are not kept.
   */
  private async once(message: A2aMessage, run: () => Promise<Message | Task>): Promise<Message | Task> {
    const request = this.retryRequest(message)
    if (request === null) return run()
    const answer = await this.market.idempotent(request, run, (reply) =>
      'messageId' in reply ? null : { status: 200, body: Task.toJSON(reply), headers: {} },
    )
    return 'replayed' in answer ? Task.fromJSON(answer.body) : answer
  }

  /**
   * How a retry of `message` is known: the Idempotency-Key header when sent, else its messageId (none: no key); the
   * same key with another order (skill, params, buyer fields, contextId) is refused.
   */
  private retryRequest(message: A2aMessage): IdempotentRequest | null {
    const header = this.caller.idempotencyKey
    // A plain text creates nothing (it is answered how to order): there is nothing to keep for a retry.
    if ((header === null && !message.messageId) || plainTextOf(message) !== null) return null
    // What the message orders (as the order sees it) is its fingerprint. An order nested deeper than any the checks
    // take is refused by them and creates nothing: it is not fingerprinted (writing it out costs what its sender sets).
    const order = orderOf(message)
    if (nestsDeeperThan(order, MAX_PARAMS_DEPTH + 4)) return null
    return {
      scope: `${this.caller.scope}\n${header === null ? 'messageId' : 'Idempotency-Key'}`,
      // A messageId is any string the client chose: its digest is a valid key of any length or alphabet.
      key: header ?? hashSecret(`a2a-message-id:${message.messageId}`),
      fingerprint: hashSecret(`a2a-message:${JSON.stringify({ order, contextId: message.contextId })}`),
      shownOnce: false,
      ...(this.caller.owners && { owners: this.caller.owners }),
    }
  }

  // biome-ignore lint/correctness/useYield: the card says streaming false; the SDK's transports expect a generator
  async *sendMessageStream(): AsyncGenerator<never, void, undefined> {
    throw new UnsupportedOperationError(
      'Streaming is not offered (capabilities.streaming false): use SendMessage.',
    )
  }

  // biome-ignore lint/correctness/useYield: as above
  async *resubscribe(): AsyncGenerator<never, void, undefined> {
    throw new UnsupportedOperationError(
      'Streaming is not offered (capabilities.streaming false): poll GetTask.',
    )
  }

  async getTask(params: { id: string }): Promise<Task> {
    try {
      // The request presents a task id only, which the seller knows too: the task id stands in as contextId.
      const found = await this.locate(params.id)
      return await this.taskOf(found.agent, params.id, params.id)
    } catch (error) {
      throw a2aErrorOf(error)
    }
  }

  async cancelTask(): Promise<Task> {
    throw new TaskNotCancelableError(
      'Orders are not cancelled: an unpaid one expires, a paid one is delivered.',
    )
  }

  async createTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError('Push notifications are not offered.')
  }
  async getTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError('Push notifications are not offered.')
  }
  async listTaskPushNotificationConfigs(): Promise<never> {
    throw new PushNotificationNotSupportedError('Push notifications are not offered.')
  }
  async deleteTaskPushNotificationConfig(): Promise<never> {
    throw new PushNotificationNotSupportedError('Push notifications are not offered.')
  }

  async listTasks(params: ListTasksRequest): Promise<ListTasksResponse> {
    try {
      const pageSize = a2aPageSize(params.pageSize)
      const offset = Number.parseInt(params.pageToken || '0', 10) || 0
      const { shown, total } = params.status
        ? await this.filteredPage(params, offset, pageSize)
        : await this.page(params.contextId, offset, pageSize)
      // Only the page is made into A2A tasks (with its x402 requirements): the costly part, charged by pageSize.
      const page = await Promise.all(shown.map(({ view, contextId }) => this.asTask(view, contextId)))
      if (!params.includeArtifacts) for (const task of page) task.artifacts = []
      const next = offset + shown.length < total ? String(offset + shown.length) : ''
      return ListTasksResponse.fromJSON({
        tasks: page.map((task) => Task.toJSON(task)),
        nextPageToken: next,
        pageSize,
        totalSize: total,
      })
    } catch (error) {
      throw a2aErrorOf(error)
    }
  }

  /** The scope of this interface's threads: the agent's name key, or '' for the marketplace's own. */
  private get scope(): string {
    return this.agent === null ? '' : this.agent.toLowerCase()
  }

  /**
   * One page of what ListTasks looks at, read page first: a thread's entries (or the seller's queue) are cut to the
   * page before any task is read. `total` counts the thread's entries (an order deleted since is left out of its page).
   */
  private async page(contextId: string, offset: number, pageSize: number): Promise<ListedPage> {
    if (this.listsQueue(contextId)) {
      const { tasks, total } = await this.queueRead(pageSize, offset)
      return { shown: tasks.map(underOwnId), total }
    }
    const entries = await this.listedEntries(contextId)
    return { shown: await this.views(entries.slice(offset, offset + pageSize)), total: entries.length }
  }

  /**
   * One page of the tasks in one A2A state: the state is the task's, so every task looked at (at most a thread's 100,
   * or the first 100 of the seller's queue) is read, and the call is charged as a full page (methods.ts).
   */
  private async filteredPage(
    params: ListTasksRequest,
    offset: number,
    pageSize: number,
  ): Promise<ListedPage> {
    const all = this.listsQueue(params.contextId)
      ? (await this.queueRead(A2A_PAGE_MAX, 0)).tasks.map(underOwnId)
      : await this.views(await this.listedEntries(params.contextId))
    const wanted = taskStateToJSON(params.status)
    const matching = all.filter(({ view }) => a2aStateOf(view) === wanted)
    return { shown: matching.slice(offset, offset + pageSize), total: matching.length }
  }

  /** True when ListTasks lists the seller's queue: no contextId, on an agent's interface, with its key. */
  private listsQueue(contextId: string): boolean {
    return !contextId && this.agent !== null && Boolean(this.apiKey)
  }

  /** `limit` tasks of the seller's queue from `offset` (the store cuts the page), and the queue's size. */
  private async queueRead(limit: number, offset: number) {
    const page = await this.market.listTasks(this.agent ?? '', this.apiKey, { status: 'all', limit, offset })
    return { tasks: page.tasks as TaskView[], total: page.total }
  }

  /**
   * The tasks ListTasks looks at, unread: a thread of this interface (the request presented its id), or a task id
   * shown as contextId (that task alone, when this interface reads it). Without a contextId only the seller's queue.
   */
  private async listedEntries(contextId: string): Promise<ListedEntry[]> {
    if (!contextId)
      throw new RequestMalformedError(
        'ListTasks lists one conversation: send the contextId your orders were answered with (or, as the seller, your API key as Authorization: Bearer to list your queue).',
      )
    const entries = await this.market.threadTasks(contextId, this.scope)
    if (entries.length > 0) return entries.map((entry: ThreadTask) => ({ ...entry, contextId }))
    try {
      const found = await this.locate(contextId)
      return [{ agent: found.agent, id: contextId, contextId }]
    } catch {
      return []
    }
  }

  /** The task views of `entries`, in order; an order deleted since (unpaid past its retention) is left out. */
  private async views(entries: readonly ListedEntry[]): Promise<ListedView[]> {
    const views = await Promise.all(
      entries.map(({ agent, id, contextId }) =>
        this.market.getTask(agent, id).then(
          (view) => ({ view, contextId }),
          () => null,
        ),
      ),
    )
    return views.filter((shown): shown is ListedView => shown !== null)
  }

  /** Where a task is: its seller and its thread when it was ordered in one of this interface's (never shown unasked). */
  private async locate(id: string): Promise<{ agent: string; thread: string | null }> {
    const known = await this.market.threadOf(id)
    const thread = known?.scope === this.scope ? known.thread : null
    if (this.agent !== null) return { agent: this.agent, thread }
    if (known && known.scope === '') return { agent: known.agent, thread }
    throw new TaskNotFoundError(`No task "${id}" was ordered through the marketplace's A2A interface.`)
  }

  /** The thread a new order joins: the client's contextId when it is one of this interface's, else a new one. */
  private async threadFor(contextId: string): Promise<string> {
    // Client-chosen ids are not accepted: a guessable one would let others list the orders under it.
    if (contextId && (await this.market.threadScope(contextId)) === this.scope) return contextId
    return this.market.newThread()
  }

  private async order(agent: string, order: Record<string, unknown>, contextId: string): Promise<Task> {
    const { skill, params, buyer, buyer_email, buyer_wallet } = order
    const answer = await this.market.createTask(
      agent,
      { skill, params, buyer, buyer_email, buyer_wallet },
      // A buyer with a spending budget is known by its key (Authorization: Bearer on the A2A request).
      { buyerKey: this.apiKey },
    )
    const view = answer.body as TaskView
    const wanted = await this.threadFor(contextId)
    const entry = { agent: view.agent, id: view.task_id }
    // A full thread (or one opened meanwhile elsewhere) is not joined: the order opens a new one.
    const thread = (await this.market.addToThread(wanted, this.scope, entry))
      ? wanted
      : this.market.newThread()
    if (thread !== wanted) await this.market.addToThread(thread, this.scope, entry)
    return this.asTask(view, thread)
  }

  /** The marketplace agent's skills: search (a message), order (a task), read a task (a message). */
  private async marketSkill(order: Record<string, unknown>, contextId: string): Promise<Message | Task> {
    const params = (typeof order.params === 'object' && order.params !== null ? order.params : {}) as Record<
      string,
      unknown
    >
    if (order.skill === MARKET_SKILLS.searchAgents)
      return this.reply(contextId, await this.market.listAgents(params))
    if (order.skill === MARKET_SKILLS.orderSkill) {
      if (typeof params.agent !== 'string')
        throw new RequestMalformedError('order-skill needs params.agent, the seller agent name.')
      const { agent, ...rest } = params
      return this.order(agent, rest, contextId)
    }
    if (order.skill === MARKET_SKILLS.readTask) {
      if (typeof params.agent !== 'string' || typeof params.task_id !== 'string')
        throw new RequestMalformedError('read-task needs params.agent and params.task_id.')
      return this.reply(contextId, await this.market.getTask(params.agent, params.task_id))
    }
    throw new RequestMalformedError(
      `Unknown skill "${String(order.skill)}": the marketplace's skills are ${Object.values(MARKET_SKILLS).join(', ')}.`,
    )
  }

  /**
   * The answer to a plain-text message: on an agent's interface its skills, each with the data part that orders it
   * (params from the skill's input schema); on the market's, the agents the text finds (the `q` of a search) and how
   * to order from one. A text part says it in words, a data part carries it.
   */
  private async guide(text: string, contextId: string): Promise<Message> {
    if (this.agent !== null) {
      const agent = await this.market.getAgent(this.agent)
      const skills = agent.skills.map((skill) => ({
        skill: skill.slug,
        name: skill.name,
        price: skill.price,
        currency: skill.currency,
        order: { skill: skill.slug, params: exampleParams(skill.input) },
      }))
      const words = `To order from ${agent.name}, send a message with a data part {"skill": "<skill>", "params": {…}}. Its skills: ${skills.map(({ skill, price }) => `${skill} (${price === null ? 'free' : `${price} USDC`})`).join(', ') || 'none yet'}. Each entry's "order" is a data part to send, with example params.`
      return this.answer(contextId, words, { skills })
    }
    const found = await this.market.listAgents({ q: text.slice(0, 100), limit: '10' })
    const words = `The market's skills take a data part: {"skill": "${MARKET_SKILLS.searchAgents}", "params": {"q": "<text>"}} searches the agents, {"skill": "${MARKET_SKILLS.orderSkill}", "params": {"agent": "<name>", "skill": "<skill>", "params": {…}}} orders from one. Your text, searched as "q", found the agents in the data part.`
    return this.answer(contextId, words, found)
  }

  /** A direct answer (no task) in words and data. */
  private answer(contextId: string, words: string, data: unknown): Message {
    return Message.fromJSON({
      messageId: crypto.randomUUID(),
      contextId,
      role: 'ROLE_AGENT',
      parts: [{ text: words }, { data, mediaType: 'application/json' }],
    })
  }

  /** A direct answer (no task): one data part. */
  private reply(contextId: string, data: unknown): Message {
    return Message.fromJSON({
      messageId: crypto.randomUUID(),
      contextId,
      role: 'ROLE_AGENT',
      parts: [{ data, mediaType: 'application/json' }],
    })
  }

  /**
   * A follow-up on an order: its payment under the a2a-x402 extension, or else the task as it stands. The answer
   * shows the task's conversation only when the message presented that contextId; else the task id stands in.
   */
  private async continueTask(message: A2aMessage): Promise<Task> {
    const found = await this.locate(message.taskId)
    const shown = found.thread !== null && message.contextId === found.thread ? found.thread : message.taskId
    const metadata = message.metadata ?? {}
    if (metadata[A2A_X402.status] !== 'payment-submitted')
      return this.taskOf(found.agent, message.taskId, shown)
    const outcome = await this.market.payTaskWithX402(found.agent, message.taskId, metadata[A2A_X402.payload])
    if (outcome.paid)
      return this.asTask(outcome.task, shown, {
        [A2A_X402.status]: 'payment-completed',
        [A2A_X402.receipts]: [outcome.receipt],
      })
    const view = await this.market.getTask(found.agent, message.taskId)
    return Task.fromJSON(
      a2aTaskOf(view, shown, {
        payment: outcome.required,
        metadata: { [A2A_X402.status]: 'payment-failed', [A2A_X402.error]: x402ErrorCode(outcome.reason) },
      }),
    )
  }

  private async taskOf(agent: string, id: string, thread: string): Promise<Task> {
    return this.asTask(await this.market.getTask(agent, id), thread)
  }

  /** A task view as an A2A Task, with what to pay by x402 while it awaits payment. */
  private async asTask(view: TaskView, thread: string, metadata?: Record<string, unknown>): Promise<Task> {
    const payment =
      view.status === 'pending_payment'
        ? await this.market.x402PaymentRequired(view.agent, view.task_id)
        : null
    if (payment === 'settling')
      return Task.fromJSON(
        a2aTaskOf(view, thread, {
          settling: true,
          metadata: { [A2A_X402.status]: 'payment-submitted', ...metadata },
        }),
      )
    return Task.fromJSON(a2aTaskOf(view, thread, { payment, metadata }))
  }
}
