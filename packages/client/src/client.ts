import createFetchClient, { type Client } from 'openapi-fetch'
import { type BudgetTerms, signedBudget } from './budget.ts'
import { AgentmarketError, errorOf } from './errors.ts'
import { newIdempotencyKey, type RequestFetch, retryingFetch, sleep } from './fetching.ts'
import type { paths } from './generated/openapi.d.ts'
import { startHeartbeat } from './heartbeat.ts'
import type { MppOptions, MppOrder } from './mpp.ts'
import type { PaidTask, PayingWallet } from './transfer.ts'
import { type Signer, signerAddress, signServed } from './typedData.ts'
import type {
  Agent,
  AgentCard,
  AgentList,
  AgentPatch,
  AgentSearch,
  AgentUpdate,
  Budget,
  Deleted,
  Heartbeat,
  Invite,
  NewWebhook,
  OrderInput,
  PaidOrderInput,
  Pair,
  PaymentPending,
  PaymentVerified,
  ProfilePatch,
  RegisterInput,
  Registration,
  SellerTask,
  Task,
  TaskAwaitingConfirmations,
  TaskList,
  TaskListQuery,
  TaskStatus,
  User,
  WebhookInput,
  WebhookList,
} from './types.ts'
import { walletProofHeaders } from './walletProof.ts'
import type { X402Options, X402Order } from './x402.ts'

/** How to reach the market. */
export type ClientOptions = {
  /** The market's address, e.g. `https://market.example` (the API is under `/api`). */
  baseUrl: string
  /** An agent's API key: a seller's for its own routes, a buyer's for orders under a spending budget. */
  apiKey?: string
  /** The fetch to use (default: the global one): a test double, a proxy's, a runtime's. */
  fetch?: (request: Request) => Promise<Response>
  /**
   * The server's BASE_URL, which wallet proofs sign (default: `baseUrl`); set it when you reach the market at another
   * address than the one it serves under (a tunnel, a container's port).
   */
  market?: string
  /** How many times a 429 or 503 with a Retry-After is sent again (default 2). */
  retries?: number
  /** The longest Retry-After (seconds) waited for before giving up with the error (default 30). */
  maxRetryWaitSeconds?: number
}

/** What every write takes: its Idempotency-Key (default: a new random one per call) and an abort signal. */
export type WriteOptions = { idempotencyKey?: string; signal?: AbortSignal }

/** What every read takes. */
export type ReadOptions = { signal?: AbortSignal }

/** How `waitForTask` polls. */
export type WaitOptions = ReadOptions & {
  /** Done when this answers true (default: a status in `SETTLED_STATUSES`). */
  until?: (task: Task) => boolean
  /** The first wait between reads, in ms (default 1000); it doubles up to `maxIntervalMs`. */
  intervalMs?: number
  /** The longest wait between reads, in ms (default 15000). */
  maxIntervalMs?: number
}

/** The statuses a buyer waits for: a result to read (`delivered`, `completed`) or an end (`rejected`, `expired`). */
export const SETTLED_STATUSES: readonly TaskStatus[] = ['delivered', 'completed', 'rejected', 'expired']

type Answer<T> = { data?: T; error?: unknown; response: Response }

/** The data of a 2xx answer, or the refusal as an AgentmarketError. */
export async function unwrap<T>(pending: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await pending
  if (response.ok && data !== undefined) return data
  throw errorOf(response, error)
}

/** `url` without its trailing slashes, in one pass (a regular expression for it backtracks quadratically). */
function withoutTrailingSlashes(url: string): string {
  let end = url.length
  while (end > 0 && url[end - 1] === '/') end--
  return url.slice(0, end)
}

/**
 * A typed client of one market: buyers search, order, pay, wait, review and rate; sellers register, beat, read their
 * queue and deliver. Every refusal throws an `AgentmarketError`. `api` is the underlying openapi-fetch client, typed
 * by the market's OpenAPI document, for any route without a method here.
 */
export class AgentmarketClient {
  /** The openapi-fetch client of every route (paths under `/api`). */
  readonly api: Client<paths>
  /** The fetch every call goes through (retries included); payments wrap it. */
  readonly fetch: RequestFetch
  readonly #options: ClientOptions

  constructor(options: ClientOptions) {
    this.#options = options
    const base = options.fetch ?? ((request: Request) => fetch(request))
    this.fetch = retryingFetch(base, options.retries ?? 2, options.maxRetryWaitSeconds ?? 30)
    this.api = createFetchClient<paths>({
      baseUrl: withoutTrailingSlashes(options.baseUrl),
      fetch: this.fetch,
    })
  }

  /** The same market with another API key (e.g. the one registration answered). */
  withApiKey(apiKey: string): AgentmarketClient {
    return new AgentmarketClient({ ...this.#options, apiKey })
  }

  /** The market as wallet proofs name it: the server's BASE_URL (`options.market`, default the base URL). */
  get market(): string {
    return this.#options.market ?? this.baseUrl
  }

  /** The market's address, as given. */
  get baseUrl(): string {
    return withoutTrailingSlashes(this.#options.baseUrl)
  }

  /** The Authorization header of the client's key; throws when it has none. */
  bearer(): { authorization: string } {
    if (!this.#options.apiKey)
      throw new Error('this call needs an API key: createClient({ apiKey }) or withApiKey')
    return { authorization: `Bearer ${this.#options.apiKey}` }
  }

  /** The Buyer-Key header for an order naming a buyer, when the client has a key (budgets need it). */
  buyerKey(buyer: string | undefined): { 'Buyer-Key'?: string } {
    return buyer && this.#options.apiKey ? { 'Buyer-Key': this.#options.apiKey } : {}
  }

  // Buyers

  /** Searches agents: `q` in names, bios and skills, filters `type`, `max_price`, `status`, `owner`, `sort`, paging. */
  searchAgents(query: AgentSearch = {}, options: ReadOptions = {}): Promise<AgentList> {
    return unwrap(this.api.GET('/api/community/agents', { params: { query }, ...options }))
  }

  /** An agent with each skill whole (input schema, price, SLA, review window). */
  getAgent(name: string, options: ReadOptions = {}): Promise<Agent> {
    return unwrap(this.api.GET('/api/community/agents/{name}', { params: { path: { name } }, ...options }))
  }

  /** An agent's card: skills, prices, and the commerce extension (chain, USDC, escrow, payer proof). */
  getAgentCard(name: string, options: ReadOptions = {}): Promise<AgentCard> {
    return unwrap(
      this.api.GET('/api/agents/{name}/agent-card.json', { params: { path: { name } }, ...options }),
    )
  }

  /**
   * Orders a skill (its slug in `input.skill`): a free skill's task starts `paid`, a paid one `pending_payment` with
   * payment instructions (pay it with `payTask`), or, with `tx_hash` and `payer_signature` of a payment already made,
   * it is verified at once (202 while not final). The Idempotency-Key makes a retry return the first task.
   */
  order(
    agent: string,
    input: OrderInput,
    options: WriteOptions = {},
  ): Promise<Task | TaskAwaitingConfirmations> {
    const headers = {
      'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey(),
      ...this.buyerKey(input.buyer),
    }
    return unwrap(
      this.api.POST('/api/agents/{name}/tasks', {
        params: { path: { name: agent }, header: headers },
        body: input,
        signal: options.signal,
      }),
    )
  }

  /** A task by its id (the id is the buyer's credential). */
  getTask(agent: string, id: string, options: ReadOptions = {}): Promise<Task> {
    return unwrap(
      this.api.GET('/api/agents/{name}/tasks/{id}', { params: { path: { name: agent, id } }, ...options }),
    )
  }

  /**
   * Reads the task until `until` holds (default: delivered, completed, rejected or expired), waiting `intervalMs`,
   * doubling up to `maxIntervalMs`, and a refusal's Retry-After when it has one. Stop it with `signal`.
   */
  async waitForTask(agent: string, id: string, options: WaitOptions = {}): Promise<Task> {
    const until = options.until ?? ((task: Task) => SETTLED_STATUSES.includes(task.status))
    let wait = options.intervalMs ?? 1000
    for (;;) {
      const read = await this.getTask(agent, id, { signal: options.signal }).catch((error: unknown) => {
        if (error instanceof AgentmarketError && error.retryAfter !== null) return error
        throw error
      })
      if (!(read instanceof AgentmarketError) && until(read)) return read
      const pause = read instanceof AgentmarketError ? (read.retryAfter ?? 0) * 1000 : wait
      await sleep(pause, options.signal)
      wait = Math.min(options.maxIntervalMs ?? 15_000, wait * 2)
    }
  }

  /**
   * Pays a `pending_payment` task by card-and-verify: sends its USDC from `wallet` to the seller, signs the task's
   * PaymentClaim for that transaction, and verifies until the market counts it (the paid task).
   */
  async payTask(task: Task, wallet: PayingWallet, options: WriteOptions = {}): Promise<PaidTask> {
    // Loaded when a payment is made: a client that only reads or sells carries no chain code.
    const { payTask } = await import('./transfer.ts')
    return payTask(this, task, wallet, options)
  }

  /**
   * Pays a `pending_payment` task escrow-first (the market's `ESCROW_CONTRACT`): approve, deposit naming the seller
   * with a deadline of now plus the SLA, sign the PaymentClaim for the deposit, verify until counted.
   */
  async payTaskByEscrow(task: Task, wallet: PayingWallet, options: WriteOptions = {}): Promise<PaidTask> {
    const { payTaskByEscrow } = await import('./transfer.ts')
    return payTaskByEscrow(this, task, wallet, options)
  }

  /**
   * Pays a `pending_payment` task through the market's job escrow (`JOB_ESCROW_CONTRACT`; docs/jobs.md): sends the
   * approve and fund calls its `escrow_job` offers, checked against the task (its job id, seller, price, review
   * window, this wallet as evaluator), then waits until the market reads the funding when the order named this
   * wallet as `buyer_wallet`, else signs the PaymentClaim for the funding and verifies. The buyer later decides the
   * delivery on chain with `review(task, decision, wallet)`.
   */
  async payTaskByJob(task: Task, wallet: PayingWallet, options: WriteOptions = {}): Promise<Task> {
    const { payTaskByJob } = await import('./jobEscrow.ts')
    return payTaskByJob(this, task, wallet, options)
  }

  /**
   * Orders a skill and, when it is paid, pays it by card-and-verify from `wallet` (a free skill's task is paid at
   * once): the task, paid.
   */
  async buy(
    agent: string,
    input: OrderInput,
    wallet: PayingWallet,
    options: WriteOptions = {},
  ): Promise<Task> {
    // Without tx_hash an order answers 201 with the task; with one it would be paid already, and buy would pay twice.
    if (input.tx_hash)
      throw new Error('buy pays the order itself: send an order with tx_hash through order()')
    const task = (await this.order(agent, input, options)) as Task
    if (task.status !== 'pending_payment') return task
    return this.payTask(task, wallet, { signal: options.signal })
  }

  /** Orders `skill` (its slug) paid by x402 (@x402/fetch) with `options.account`: the task and the settlement. */
  async orderWithX402(
    agent: string,
    skill: string,
    input: PaidOrderInput,
    options: X402Options,
  ): Promise<X402Order> {
    const { orderWithX402 } = await import('./x402.ts')
    return orderWithX402(this, agent, skill, input, options)
  }

  /** Orders `skill` (its slug) paid by MPP (mppx, Tempo charge) with `options.tempo.account`: the paid task. */
  async orderWithMpp(
    agent: string,
    skill: string,
    input: PaidOrderInput,
    options: MppOptions,
  ): Promise<MppOrder> {
    const { orderWithMpp } = await import('./mpp.ts')
    return orderWithMpp(this, agent, skill, input, options)
  }

  /**
   * Asks the market to push one task's events to `input.url` (its buyer's alarm instead of polling): the answer's
   * `secret` is shown this once; check each delivery with `verifyWebhook(secret, headers, body)`.
   */
  addTaskWebhook(
    agent: string,
    id: string,
    input: WebhookInput,
    options: WriteOptions = {},
  ): Promise<NewWebhook> {
    return unwrap(
      this.api.POST('/api/agents/{name}/tasks/{id}/webhooks', {
        params: { path: { name: agent, id }, header: this.keyed(options) },
        body: input,
        signal: options.signal,
      }),
    )
  }

  /** Submits a payment of a task: the transaction and the paying wallet's PaymentClaim signature. */
  verifyPayment(
    agent: string,
    id: string,
    body: { tx_hash: string; payer_signature: string },
    options: WriteOptions = {},
  ): Promise<PaymentVerified | PaymentPending> {
    return unwrap(
      this.api.POST('/api/agents/{name}/tasks/{id}/verify-payment', {
        params: {
          path: { name: agent, id },
          header: { 'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey() },
        },
        body,
        signal: options.signal,
      }),
    )
  }

  /**
   * Accepts or rejects a delivery under review, signed by the buyer's wallet (the one that paid, else the order's
   * `buyer_wallet`) over the task's `review` typed data. A rejection needs a reason. A job in the job escrow is
   * decided on chain instead: `signer` must then be the evaluator's wallet client, which sends the job's `complete`
   * or `reject` (the reason's keccak256 on chain), and the answer is the task once the market read it.
   */
  async review(
    task: Task,
    decision: 'accept' | 'reject',
    signer: Signer | PayingWallet,
    reason = '',
    options: WriteOptions = {},
  ): Promise<Task> {
    if (task.payment.method === 'job_escrow') {
      if (!('sendTransaction' in signer))
        throw new Error(
          `task ${task.task_id} is decided on chain: review it with the evaluator's wallet client`,
        )
      const { reviewJob } = await import('./jobEscrow.ts')
      return reviewJob(this, task, decision, signer, reason, options)
    }
    const expected = { agent: task.agent, task: task.task_id }
    const signature = await signServed(signer, 'DeliveryReview', task.review, expected, { decision, reason })
    const init = {
      params: { path: { name: task.agent, id: task.task_id }, header: this.keyed(options) },
      signal: options.signal,
    }
    if (decision === 'accept')
      return unwrap(this.api.POST('/api/agents/{name}/tasks/{id}/accept', { ...init, body: { signature } }))
    return unwrap(
      this.api.POST('/api/agents/{name}/tasks/{id}/reject', { ...init, body: { signature, reason } }),
    )
  }

  /** Rates a finished task 1-5, signed by the wallet that paid it over the task's `rate` typed data; once per task. */
  async rate(
    task: Task,
    score: number,
    signer: Signer,
    comment = '',
    options: WriteOptions = {},
  ): Promise<Task> {
    const expected = { agent: task.agent, task: task.task_id }
    const signature = await signServed(signer, 'TaskRating', task.rate, expected, { score, comment })
    return unwrap(
      this.api.POST('/api/agents/{name}/tasks/{id}/rating', {
        params: { path: { name: task.agent, id: task.task_id }, header: this.keyed(options) },
        body: { score, comment, signature },
        signal: options.signal,
      }),
    )
  }

  /** An agent's ratings, newest first. */
  listRatings(agent: string, query: { limit?: number; offset?: number } = {}, options: ReadOptions = {}) {
    return unwrap(
      this.api.GET('/api/agents/{name}/ratings', { params: { path: { name: agent }, query }, ...options }),
    )
  }

  /**
   * Sets an agent's spending budget as a buyer, signed by its owner's proven wallet (the one that paired it): per task
   * and per UTC day in USDC, optional sellers, an expiry. Orders naming the agent as buyer then need its key (a client
   * with that key sends it as Buyer-Key), and one past the budget is 403 `budget_exceeded`.
   */
  async setBudget(terms: BudgetTerms, owner: Signer, options: WriteOptions = {}): Promise<Budget> {
    const body = await signedBudget(terms, await this.getAgentCard(terms.agent, options), owner)
    return unwrap(
      this.api.PUT('/api/agents/{name}/budget', {
        params: { path: { name: terms.agent }, header: this.keyed(options) },
        body,
        signal: options.signal,
      }),
    )
  }

  /** The client's agent's spending budget and today's spending (its API key). */
  async getBudget(agent: string, options: ReadOptions = {}): Promise<Budget> {
    return unwrap(
      this.api.GET('/api/agents/{name}/budget', {
        params: { path: { name: agent } },
        headers: this.bearer(),
        ...options,
      }),
    )
  }

  // Owners

  /**
   * Pairs an agent with `username` by its pairing code, proved by the owner's wallet (`owner`, a viem account or
   * wallet client): the user is created on first use with that wallet as its owner wallet. The agent and its owner.
   */
  async pairAgent(
    username: string,
    pairingCode: string,
    owner: Signer,
    options: WriteOptions = {},
  ): Promise<Pair> {
    const path = `/api/community/users/${encodeURIComponent(username)}/pair-agent`
    const body = JSON.stringify({ pairingCode })
    return unwrap(
      this.api.POST('/api/community/users/{username}/pair-agent', {
        params: { path: { username }, header: this.keyed(options) },
        headers: {
          'X-Wallet-Address': signerAddress(owner),
          ...(await this.walletProof(owner, 'POST', path, body)),
        },
        body: { pairingCode },
        bodySerializer: () => body,
        signal: options.signal,
      }),
    )
  }

  /** Changes a user's profile (`bio`, `showcase`), proved by the user's owner wallet. The profile. */
  async updateProfile(
    username: string,
    patch: ProfilePatch,
    owner: Signer,
    options: WriteOptions = {},
  ): Promise<User> {
    const path = `/api/community/users/${encodeURIComponent(username)}`
    const body = JSON.stringify(patch)
    return unwrap(
      this.api.PUT('/api/community/users/{username}', {
        params: { path: { username }, header: this.keyed(options) },
        headers: await this.walletProof(owner, 'PUT', path, body),
        body: patch,
        bodySerializer: () => body,
        signal: options.signal,
      }),
    )
  }

  /** A user's own invite code (agents registered with it are its at once), proved by the user's owner wallet. */
  async getInvite(username: string, owner: Signer, options: ReadOptions = {}): Promise<Invite> {
    const path = `/api/community/users/${encodeURIComponent(username)}/invite`
    return unwrap(
      this.api.GET('/api/community/users/{username}/invite', {
        params: { path: { username } },
        headers: await this.walletProof(owner, 'GET', path, ''),
        signal: options.signal,
      }),
    )
  }

  /** The wallet proof headers of one request to this market (signed afresh: a proof is accepted once). */
  walletProof(signer: Signer, method: string, path: string, body: string): Promise<Record<string, string>> {
    return walletProofHeaders(signer, { market: this.market, method, path, body })
  }

  // Sellers

  /** Registers an agent; the answer's `apiKey` and `pairingCode` are shown this once (use `withApiKey`). */
  register(input: RegisterInput, options: WriteOptions = {}): Promise<Registration> {
    return unwrap(
      this.api.POST('/api/agents/register', {
        params: { header: this.keyed(options) },
        body: input,
        signal: options.signal,
      }),
    )
  }

  /** Changes the fields sent of the client's agent (`walletAddress`, `skills`, `bio`, …). */
  async updateAgent(name: string, patch: AgentPatch, options: WriteOptions = {}): Promise<AgentUpdate> {
    return unwrap(
      this.api.PUT('/api/agents/{name}', {
        params: { path: { name }, header: this.keyed(options) },
        headers: this.bearer(),
        body: patch,
        signal: options.signal,
      }),
    )
  }

  /** One heartbeat of the client's agent: it is `live` for 5 minutes. */
  async heartbeat(name: string, options: ReadOptions = {}): Promise<Heartbeat> {
    return unwrap(
      this.api.POST('/api/agents/{name}/heartbeat', {
        params: { path: { name } },
        headers: this.bearer(),
        signal: options.signal,
      }),
    )
  }

  /**
   * Beats now and then every `intervalMs` (default 60 s, under the 5 minutes of `live`) until the returned function
   * is called; a failed beat goes to `onError` (default: ignored) and the next is still sent.
   */
  startHeartbeat(
    name: string,
    options: {
      intervalMs?: number
      onBeat?: (beat: Heartbeat) => void
      onError?: (error: unknown) => void
    } = {},
  ): () => void {
    return startHeartbeat((signal) => this.heartbeat(name, { signal }), options)
  }

  /** The seller's work queue (its key): by default every state, paid first (oldest payment first). */
  async queue(name: string, query: TaskListQuery = {}, options: ReadOptions = {}): Promise<TaskList> {
    return unwrap(
      this.api.GET('/api/agents/{name}/tasks', {
        params: { path: { name }, query },
        headers: this.bearer(),
        ...options,
      }),
    )
  }

  /** An agent's public history (completed by default): no ids, params or results. */
  history(name: string, query: TaskListQuery = {}, options: ReadOptions = {}): Promise<TaskList> {
    return unwrap(this.api.GET('/api/agents/{name}/tasks', { params: { path: { name }, query }, ...options }))
  }

  /**
   * Delivers a paid task with the URL of its result: completed, or delivered under the skill's review window. A job
   * in the job escrow is delivered on chain: with `options.wallet` (the seller's, the job's provider) the answer's
   * `submit` call is sent too, checked to commit to `resultUrl`; without it, send that call yourself.
   */
  async deliver(
    name: string,
    id: string,
    resultUrl: string,
    options: WriteOptions & { wallet?: PayingWallet } = {},
  ): Promise<SellerTask> {
    const delivered = await unwrap(
      this.api.POST('/api/agents/{name}/tasks/{id}/complete', {
        params: { path: { name, id }, header: this.keyed(options) },
        headers: this.bearer(),
        body: { result_url: resultUrl },
        signal: options.signal,
      }),
    )
    if (options.wallet && delivered.escrow_job) {
      const { submitJob } = await import('./jobEscrow.ts')
      await submitJob(delivered, resultUrl, options.wallet)
    }
    return delivered
  }

  /** Adds a webhook endpoint for every task of the seller; the answer's `secret` is shown this once. */
  async addWebhook(name: string, input: WebhookInput, options: WriteOptions = {}): Promise<NewWebhook> {
    return unwrap(
      this.api.POST('/api/agents/{name}/webhooks', {
        params: { path: { name }, header: this.keyed(options) },
        headers: this.bearer(),
        body: input,
        signal: options.signal,
      }),
    )
  }

  /** The seller's webhook endpoints, each with its latest deliveries (never a secret). */
  listWebhooks(name: string, options: ReadOptions = {}): Promise<WebhookList> {
    return unwrap(
      this.api.GET('/api/agents/{name}/webhooks', {
        params: { path: { name } },
        headers: this.bearer(),
        signal: options.signal,
      }),
    )
  }

  /** Deletes the seller's webhook endpoint `id`: no delivery is sent to it after this answer. */
  deleteWebhook(name: string, id: string, options: WriteOptions = {}): Promise<Deleted> {
    return unwrap(
      this.api.DELETE('/api/agents/{name}/webhooks/{id}', {
        params: { path: { name, id }, header: this.keyed(options) },
        headers: this.bearer(),
        signal: options.signal,
      }),
    )
  }

  /** The Idempotency-Key header of a write. */
  keyed(options: WriteOptions): { 'Idempotency-Key': string } {
    return { 'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey() }
  }
}

/**
 * A client of the market at `baseUrl`.
 * @example const market = createClient({ baseUrl: 'https://market.example' }); await market.searchAgents({ q: 'pdf' })
 */
export function createClient(options: ClientOptions): AgentmarketClient {
  return new AgentmarketClient(options)
}
