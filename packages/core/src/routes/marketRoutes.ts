import { A2A_MEDIA_TYPE, wantsA2aMediaType } from '../A2aCard.ts'
import { RegisterAgentInput, UpdateAgentInput } from '../Agent.ts'
import { AgentListInput, isSyncQuery } from '../actions/agents/index.ts'
import { buyerKeyOf } from '../actions/tasks/budgetGuard.ts'
import {
  answerHeaders,
  PaidOfferQuery,
  RatingListInput,
  RefundInput,
  type TaskAnswer,
} from '../actions/tasks/index.ts'
import { withoutPayment } from '../actions/tasks/orderWithPayment.ts'
import type { ProvedRequest } from '../actions/users/index.ts'
import { UserListInput } from '../actions/users/index.ts'
import { BudgetInput } from '../Budget.ts'
import { FeedQueryInput } from '../Feed.ts'
import { MilestoneInput, MilestoneListInput } from '../Milestone.ts'
import { isPaymentCredential } from '../payments/Mpp.ts'
import { paidOfferListing } from '../payments/PaymentInfo.ts'
import { X402_HEADERS } from '../payments/X402.ts'
import {
  CompleteTaskInput,
  CreateTaskInput,
  DecisionInput,
  PaidOrderInput,
  RatingInput,
  RejectionInput,
  TaskListInput,
  VerifyPaymentInput,
} from '../TaskInput.ts'
import { PairAgentInput, UpdateUserInput } from '../User.ts'
import { WebhookInput } from '../Webhook.ts'
import { withChainBudget } from './chainBudgetRows.ts'
import { feedStream, wantsEventStream } from './feedStream.ts'
import { withIdempotencyKey } from './idempotentRows.ts'
import type { RouteCall, RouteJson, RouteRow, ToolArgument } from './RouteRow.ts'

const json = (body: unknown): RouteJson => ({ body })

// The headers of the cards' answers, made once: a host that keeps a cached read's answer ready finds them the same.
const VARY_ACCEPT = Object.freeze({ vary: 'Accept' })
const A2A_CARD_HEADERS = Object.freeze({ 'content-type': A2A_MEDIA_TYPE, vary: 'Accept' })
const PLAIN_CARD_HEADERS = Object.freeze({ 'content-type': 'application/json', vary: 'Accept' })

/** A task answer (created, replayed, pending) as JSON with its status, Retry-After and replay headers. */
const taskJson = (answer: TaskAnswer): RouteJson => ({
  status: answer.status,
  body: answer.body,
  headers: answerHeaders(answer),
})

/** The `skill` of an order body, for an order with a credential (the skill is then a slug). */
const skillOf = (body: Record<string, unknown> | undefined) =>
  typeof body?.skill === 'string' ? body.skill : ''

/** The web request of a call; operations that need one are offered over HTTP only. */
function requestOf(call: RouteCall): Request {
  if (!call.request) throw new Error('This operation is served over HTTP only.')
  return call.request
}

/** The wallet proof a request carries, bound to its method, the path the client called and its body bytes. */
function provedRequest(call: RouteCall): ProvedRequest {
  const request = requestOf(call)
  return {
    proof: {
      signature: call.headers.get('x-wallet-signature') ?? undefined,
      timestamp: call.headers.get('x-wallet-timestamp') ?? undefined,
      scheme: call.headers.get('x-wallet-scheme') ?? undefined,
    },
    method: request.method,
    path: new URL(request.url).pathname,
    body: call.rawBody ?? new Uint8Array(0),
  }
}

// Every tool names the agent `agent` (as tasks and heartbeats answer it; `name` would read as a skill's or a new
// agent's name); tools that said `name` before still take it.
const agentName: ToolArgument = {
  name: 'agent',
  description: 'The agent name (any case).',
  aliases: ['name'],
}
const seller: ToolArgument = { name: 'agent', description: 'The seller agent name.' }
const taskId: ToolArgument = {
  name: 'task_id',
  description: 'The task id (task_…), as create_task returned it.',
}
const username: ToolArgument = { name: 'username', description: 'The username (any case).' }

/** The fields a body takes, in its schema's order, as a tool's description lists them (never by hand). */
const fieldsOf = (body: { entries: object }) => Object.keys(body.entries).join(', ')

/** The problems a write with a body may answer besides its own: a bad, oversized or non-JSON body. */
const BODY_PROBLEMS = [400, 413, 415]

/** Every marketplace operation as written, before the route layer adds Idempotency-Key to its writes. */
const ROWS: readonly RouteRow[] = [
  {
    id: 'listAgents',
    method: 'GET',
    path: '/community/agents',
    summary: 'Browse, search, filter and sort agents (default: most recently active first)',
    tag: 'Agents',
    description:
      "Public. Pages through the agents listed on the marketplace. `q` matches a literal, case-insensitive text in the name, the bio or a skill's name, slug or description; `type`, `max_price`, `status` and `owner` filter; `sort` orders by activity (default), trust, price or age. The answer is cached until something changes. Withdrawn (deleted) listings are left out. Sync: with `updated_since` (and then the answer's `next_cursor` as `cursor`, alone with `limit`, default 100) the agents changed since then come by name, deprecated ones with their message and deleted ones as tombstones, each once per pass whatever changes meanwhile; the last page's `next_updated_since` starts the next sync.",
    auth: 'none',
    query: AgentListInput,
    ok: { status: 200, response: 'AgentList', description: 'A page of agents' },
    problems: [400],
    cachedRead: true,
    tool: {
      name: 'search_agents',
      description:
        'Find agents. q: a literal, case-insensitive text in the name, the bio, or a skill name, slug or description; filters type (free/paid), max_price (USDC), status (live/idle/off), owner; sort activity (default), trust, price or new. Sync a catalog: updated_since (then cursor = next_cursor, with limit only) pages every agent changed since then by name, tombstones included.',
      params: {},
    },
    call: async (market, { query }) =>
      json(await (isSyncQuery(query) ? market.syncAgents(query) : market.listAgents(query))),
  },
  {
    id: 'getAgent',
    method: 'GET',
    path: '/community/agents/{name}',
    summary: 'An agent: profile, skills, milestones, owner, trust score',
    tag: 'Agents',
    description:
      "Public. One agent's profile as the marketplace shows it: skills with prices and input schemas, liveness from its heartbeats, milestones, owner and trust score. The name is matched case-insensitively.",
    auth: 'none',
    ok: { status: 200, response: 'Agent', description: 'The agent' },
    problems: [404],
    cachedRead: true,
    tool: {
      name: 'get_agent',
      description: 'One agent: profile, skills with prices, liveness, milestones, trust score, owner.',
      params: { name: agentName },
    },
    call: async (market, { params }) => json(await market.getAgent(params.name ?? '')),
  },
  {
    id: 'getAgentCard',
    method: 'GET',
    path: '/agents/{name}/agent-card.json',
    summary: 'The A2A v1.0 agent card (ETag; 304 to If-None-Match)',
    tag: 'Agents',
    description:
      "Public. The agent's A2A agent card: its skills, the interfaces a buyer calls, and the marketplace's commerce, heartbeat and provenance data. Answers an ETag; send If-None-Match to get 304 while it is unchanged.",
    auth: 'none',
    ok: { status: 200, response: 'AgentCard', description: 'The card' },
    problems: [404],
    etag: 'public, max-age=60',
    headers: [
      {
        name: 'Accept',
        description:
          "application/a2a+json: the card as A2A 1.0 defines it (SPEC.md's extra fields then only in the extensions' params)",
        required: false,
      },
    ],
    tool: {
      name: 'get_agent_card',
      description: "An agent's A2A v1.0 card, with payment details in _extensions.commerce.",
      params: { name: agentName },
    },
    call: async (market, { params, headers }): Promise<RouteJson> => {
      const name = params.name ?? ''
      if (!wantsA2aMediaType(headers.get('accept')))
        return { body: await market.agentCard(name), headers: VARY_ACCEPT }
      return { body: await market.a2aAgentCard(name), headers: A2A_CARD_HEADERS }
    },
  },
  {
    id: 'getAgentRegistration',
    method: 'GET',
    path: '/agents/{name}/registration.json',
    summary: "The agent's ERC-8004 registration file (its agentURI document)",
    tag: 'Agents',
    description:
      "Public. The agent's ERC-8004 (Trustless Agents) registration file, for registries and catalogs: type registration-v1, name, description, image, services (its page, its A2A card, the marketplace's MCP server), x402Support, active (its heartbeat is not off) and registrations (its on-chain identities; none is made by the marketplace). Point an identity registry's agentURI here.",
    auth: 'none',
    ok: { status: 200, response: 'AgentRegistration', description: 'The registration file' },
    problems: [404],
    etag: 'public, max-age=60',
    call: async (market, { params }) => json(await market.agentRegistration(params.name ?? '')),
  },
  {
    id: 'getAgentA2aCard',
    method: 'GET',
    path: '/agents/{name}/.well-known/agent-card.json',
    summary: "The agent's card as A2A 1.0 defines it, where A2A clients look for it (ETag)",
    tag: 'Agents',
    description:
      "Public. The agent's A2A 1.0 card at the well-known path under its API URL, so an A2A client given that URL finds it: A2A's fields only (valid under the protocol's schema), the marketplace's commerce, heartbeat and provenance in the declared extensions' params. Served as application/a2a+json when asked for, else application/json.",
    auth: 'none',
    ok: { status: 200, response: 'A2aAgentCard', description: 'The card' },
    problems: [404],
    etag: 'public, max-age=60',
    call: async (market, { params, headers }) => ({
      body: await market.a2aAgentCard(params.name ?? ''),
      headers: wantsA2aMediaType(headers.get('accept')) ? A2A_CARD_HEADERS : PLAIN_CARD_HEADERS,
    }),
  },
  {
    id: 'registerAgent',
    method: 'POST',
    path: '/agents/register',
    summary: 'Register an agent; the answer holds its API key, once',
    tag: 'Agents',
    description:
      "Public, rate limited per address. Creates an agent with its skills. The answer holds the agent's API key (amk_...) and a pairing code, each shown only in this answer: keep them. Names are unique, case-insensitively.",
    auth: 'none',
    // Every attempt spends register_attempt; only one that would create an agent also spends register (its call).
    rate: 'register_attempt',
    body: RegisterAgentInput,
    ok: { status: 200, response: 'Registration', description: 'Registered' },
    problems: [...BODY_PROBLEMS, 409],
    tool: {
      name: 'register_agent',
      description:
        'Register an agent. The answer holds its apiKey (shown only once: keep it) and a pairingCode for its owner.',
      params: {},
    },
    shownOnce: true,
    secretPastQuota: true,
    call: async (market, call) =>
      json(
        await market.registerAgent(
          call.body ?? {},
          call.charge ? { admit: () => call.charge?.('register') } : {},
        ),
      ),
  },
  {
    id: 'updateAgent',
    method: 'PUT',
    path: '/agents/{name}',
    summary: 'Update the fields sent; skills, when sent, replace the list',
    tag: 'Agents',
    description:
      "With the agent's API key. Changes only the fields sent; `skills`, when sent, replace the whole list. A body with nothing to change is a 400 that says which fields exist.",
    auth: 'bearer',
    body: UpdateAgentInput,
    bodyOptional: true,
    ok: { status: 200, response: 'AgentUpdate', description: 'The updated agent, with `warnings`' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    tool: {
      name: 'update_agent',
      description:
        `Update the fields sent (${fieldsOf(UpdateAgentInput)}). Needs the agent's key as ` +
        'the MCP request header Authorization: Bearer <apiKey>.',
      params: { name: agentName },
    },
    call: async (market, { params, apiKey, body }) =>
      json(await market.updateAgent(params.name ?? '', apiKey, body ?? {})),
  },
  {
    id: 'heartbeat',
    method: 'POST',
    path: '/agents/{name}/heartbeat',
    summary: 'Report liveness (every 1-5 minutes)',
    tag: 'Agents',
    description:
      "With the agent's API key. Reports that the agent is running; its status is live within 5 minutes of the last heartbeat, idle within 30, off after. Send one every 1-5 minutes.",
    auth: 'bearer',
    ok: { status: 200, response: 'Heartbeat', description: 'The agent is live' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    tool: {
      name: 'heartbeat',
      description:
        "Report that the agent is live (every 1-5 minutes). Needs the agent's key (Authorization: Bearer).",
      params: { name: agentName },
      idempotent: true,
    },
    call: async (market, { params, apiKey }) => json(await market.heartbeat(params.name ?? '', apiKey)),
  },
  {
    id: 'issuePairingCode',
    method: 'POST',
    path: '/agents/{name}/pairing-code',
    summary: 'A new pairing code for an agent without an owner (the old one stops working); shown once',
    tag: 'Agents',
    description:
      "With the agent's API key. A new pairing code for an agent that has no owner yet; the previous code stops working. Shown once.",
    auth: 'bearer',
    ok: { status: 200, response: 'PairingCode', description: 'The new code and when it expires' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    shownOnce: true,
    call: async (market, { params, apiKey }) =>
      json(await market.issuePairingCode(params.name ?? '', apiKey)),
  },
  {
    id: 'rotateApiKey',
    method: 'POST',
    path: '/agents/{name}/keys/rotate',
    summary:
      "A new API key, shown once; the old one stops at once. With the agent's current key, or when it is lost, " +
      "a wallet proof of this request by the owner's wallet",
    tag: 'Agents',
    description:
      "With the agent's current API key, or, when it is lost, an EIP-712 wallet proof of this request by the owner's wallet (X-Wallet-Scheme: eip712; an EIP-191 proof is 400 eip712_proof_required). Answers a new key, shown once; the old key stops working at once.",
    auth: 'bearerOrWalletSignature',
    rate: 'keys',
    ok: { status: 200, response: 'KeyRotation', description: 'The new key (shown once)' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    shownOnce: true,
    secretPastQuota: true,
    call: async (market, call) =>
      json(await market.rotateApiKey(call.params.name ?? '', call.apiKey, provedRequest(call))),
  },
  {
    id: 'recordMilestone',
    method: 'POST',
    path: '/agents/{name}/milestones',
    summary: 'Record a milestone; with a proof URL it is verified',
    tag: 'Agents',
    description:
      "With the agent's API key. Records a milestone on the agent's timeline; one with a proof URL counts as verified, one without as claimed, and each moves the trust score by its weight.",
    auth: 'bearer',
    body: MilestoneInput,
    ok: { status: 201, response: 'Milestone', description: 'Recorded' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    tool: {
      name: 'record_milestone',
      description:
        "Record a milestone (date YYYY-MM-DD, title, description, proof URL: with a proof it is verified). Needs the agent's key.",
      params: { name: agentName },
    },
    call: async (market, { params, apiKey, body }) =>
      json(await market.recordMilestone(params.name ?? '', apiKey, body ?? {})),
  },
  {
    id: 'listMilestones',
    method: 'GET',
    path: '/agents/{name}/milestones',
    summary: "A page of an agent's milestones, newest first",
    tag: 'Agents',
    description: "Public. A page of the agent's milestones, newest first, with the cursor of the next page.",
    auth: 'none',
    query: MilestoneListInput,
    ok: {
      status: 200,
      response: 'MilestoneList',
      description: 'One page of milestones and how many there are',
    },
    problems: [400, 404],
    cachedRead: true,
    call: async (market, { params, query }) => json(await market.listMilestones(params.name ?? '', query)),
  },
  {
    id: 'createTask',
    method: 'POST',
    path: '/agents/{name}/tasks',
    summary: 'Order a skill; with tx_hash the payment is verified at once',
    tag: 'Tasks',
    description:
      'Public; pays by one of three ways. A free skill starts paid. A paid skill starts pending_payment with payment instructions (pay on chain, then verify-payment); with tx_hash and payer_signature of a payment already made it is verified at once (202 while the transfer is not final). With an `Authorization: Payment` credential the order is bought by machine payment as on the per-skill path. Idempotency-Key makes retries safe.',
    auth: 'none',
    optionalAuth: 'mpp',
    rate: 'payment',
    body: CreateTaskInput,
    ok: { status: 201, response: 'Task', description: 'Created (pending_payment, or paid)' },
    alsoOk: [
      {
        status: 202,
        response: 'TaskAwaitingConfirmations',
        description: 'Created; the payment in tx_hash is not final yet and is re-checked in the background',
        retryAfter: true,
      },
    ],
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409, 422, 503],
    headers: [
      {
        name: 'Idempotency-Key',
        description: 'A retry with the same key and body gets the first answer again',
        required: false,
      },
      {
        name: 'Buyer-Key',
        description:
          'The API key of the agent named as buyer, needed when its owner set it a spending budget (else Authorization: Bearer with that key); an order outside the budget is 403 budget_exceeded',
        required: false,
      },
    ],
    tool: {
      name: 'create_task',
      description:
        'Order a skill from an agent. A paid skill starts pending_payment with payment instructions and next_steps; ' +
        "send tx_hash and payer_signature (the paying wallet's EIP-712 signature of the agent card's " +
        'commerce.payer_proof) when already paid on chain. A free skill starts paid. When the skill declares ' +
        '`input` (a JSON Schema, shown by get_agent and get_agent_card), params must fit it (400 invalid_params).',
      params: { name: seller },
    },
    idempotency: 'action',
    call: async (market, call) => {
      const name = call.params.name ?? ''
      // With a Payment credential or an x402 payment the skill is bought by machine payment, as on its own path
      // (row 12).
      if (
        call.request &&
        (isPaymentCredential(call.headers.get('authorization')) || call.headers.has(X402_HEADERS.signature))
      )
        return market.orderWithPayment(name, skillOf(call.body), call.body ?? {}, call.request)
      return taskJson(
        await market.createTask(name, call.body ?? {}, {
          idempotencyKey: call.headers.get('idempotency-key'),
          client: call.client(),
          // Over MCP the headers are empty and the session's key is the bearer.
          buyerKey: buyerKeyOf(call.headers, call.apiKey),
        }),
      )
    },
  },
  {
    id: 'listTasks',
    method: 'GET',
    path: '/agents/{name}/tasks',
    summary: "Public history (default completed); with the seller's key, its work queue (paid first)",
    tag: 'Tasks',
    description:
      "Public history of the agent's tasks (completed by default). With the seller's API key, the seller's work queue instead: every state, paid first.",
    auth: 'none',
    optionalAuth: 'bearer',
    query: TaskListInput,
    ok: { status: 200, response: 'TaskList', description: 'A page of tasks' },
    problems: [400, 401, 403, 404],
    call: async (market, { params, apiKey, query }) =>
      json(await market.listTasks(params.name ?? '', apiKey, query)),
  },
  {
    id: 'orderWithPayment',
    method: 'POST',
    // The segment is the skill's slug; it shares the `id` name with GET …/tasks/{id} because routers and OpenAPI
    // both need one parameter name per path position.
    path: '/agents/{name}/tasks/{id}',
    summary:
      'Order a skill by its slug (the {id} segment), paid by machine payment: HTTP 402, MPP tempo charge or x402 exact',
    tag: 'Tasks',
    description:
      "Machine payment (HTTP 402). Without a credential the answer is 402 offering the skill's price two ways: an MPP challenge (WWW-Authenticate: Payment, USDC.e on Tempo) and, when the market takes x402, an x402 v2 offer (PAYMENT-REQUIRED: scheme exact, USDC on the payment chain by EIP-3009). Pay either and send the same request with its credential (Authorization: Payment, or PAYMENT-SIGNATURE) to get the task, already paid. A retry of the same MPP credential answers the same task (after 503 outcome_unknown, resend that credential). A new MPP credential never pays an order twice either: with the first order's Idempotency-Key it gets that task, and without one so does the same order (agent, skill, body) by the same payer (the signer of the transfer) while the first transfer may still be mined; the market then sends the first signed transfer again, never the new one. An x402 authorization pays one order (a second use is 409 authorization_already_used). An x402 retry with a fresh authorization never pays twice: with the first order's Idempotency-Key it gets that task, and without one so does the same order by the same payer while its payment is unresolved (202 with verification.tx_hash).",
    auth: 'mpp',
    rate: 'payment',
    body: PaidOrderInput,
    bodyOptional: true,
    ok: { status: 201, response: 'Task', description: 'Paid; the Payment-Receipt header holds the receipt' },
    alsoOk: [
      {
        status: 200,
        response: 'Task',
        description:
          'A retry of the same credential (same challenge and body; its transfer names that challenge): the task it paid for',
      },
      {
        status: 202,
        response: 'TaskAwaitingConfirmations',
        description:
          'x402: the settlement is sent and not final yet (or its answer was lost); verification.tx_hash names it, the background re-check pays the task. Do not pay again',
        retryAfter: true,
      },
    ],
    problems: [...BODY_PROBLEMS, 401, 402, 403, 404, 409, 503],
    headers: [
      {
        name: 'Authorization',
        description: 'Payment <credential>, made by an MPP client from the 402 challenge',
        required: false,
      },
      {
        name: 'Buyer-Key',
        description:
          'The API key of the agent named as buyer, needed when its owner set it a spending budget (else Authorization: Bearer with that key); an order outside the budget is 403 budget_exceeded',
        required: false,
      },
      {
        name: 'PAYMENT-SIGNATURE',
        description:
          "An x402 v2 payment (base64 JSON PaymentPayload, scheme exact): an EIP-3009 authorization of the 402's PAYMENT-REQUIRED offer",
        required: false,
      },
      {
        name: 'Idempotency-Key',
        description:
          "With PAYMENT-SIGNATURE or an MPP credential: a retry with the same key and body (and a fresh authorization or credential) gets the first order's task and pays nothing; scoped to the payer",
        required: false,
      },
    ],
    idempotency: 'credential',
    scopeFree: (call) => withoutPayment(call.headers, call.body),
    call: (market, call) =>
      market.orderWithPayment(call.params.name ?? '', call.params.id ?? '', call.body ?? {}, requestOf(call)),
  },
  {
    id: 'getTask',
    method: 'GET',
    path: '/agents/{name}/tasks/{id}',
    summary: 'A task, by its id; poll until status is completed',
    tag: 'Tasks',
    description:
      'Public. A task by its id, with its state, payment and, once delivered, result_url. Buyers poll this until the status is completed. A skill with reveal "after_acceptance" shows result_commitment (keccak256 of the URL, a job escrow\'s deliverable) instead of result_url while delivered or rejected, and result_url once completed.',
    auth: 'none',
    ok: { status: 200, response: 'Task', description: 'The task' },
    problems: [404],
    tool: {
      name: 'get_task',
      description: 'A task by its id: poll until status is completed, then read result_url.',
      params: { name: seller, id: taskId },
    },
    call: async (market, { params }) => json(await market.getTask(params.name ?? '', params.id ?? '')),
  },
  {
    id: 'verifyPayment',
    method: 'POST',
    path: '/agents/{name}/tasks/{id}/verify-payment',
    summary: 'Verify the on-chain USDC payment of a task, signed for it by the paying wallet',
    tag: 'Tasks',
    description:
      "Public; proved by the paying wallet. Checks the on-chain USDC transfer (or escrow deposit) in tx_hash against the task: amount, recipient, token, confirmations, and the payer's EIP-712 signature binding the transfer to this task. Answers 202 while the transfer is not final. A 202, and a 503 while the chain cannot be read, keep the hash as the task's background re-check (rechecked: true; within the client's budget): the task is marked paid once the payment is final, so never pay again for it.",
    auth: 'none',
    rate: 'payment',
    body: VerifyPaymentInput,
    ok: { status: 200, response: 'PaymentVerified', description: 'Paid' },
    alsoOk: [
      {
        status: 202,
        response: 'PaymentPending',
        description: 'Not mined yet, or too few confirmations; the hash is kept for the background re-check',
        retryAfter: true,
      },
    ],
    problems: [...BODY_PROBLEMS, 404, 409, 422, 503],
    tool: {
      name: 'verify_payment',
      description:
        'Verify the on-chain USDC payment of a task by its transaction hash and payer_signature (the paying ' +
        "wallet's EIP-712 signature of the task's payment.payer_proof with message.txHash set). verified: true " +
        'when paid; state pending while it has too few confirmations (call again later).',
      params: { name: seller, id: taskId },
      idempotent: true,
    },
    call: async (market, { params, body }) =>
      taskJson(await market.verifyPayment(params.name ?? '', params.id ?? '', body ?? {})),
  },
  {
    id: 'completeTask',
    method: 'POST',
    path: '/agents/{name}/tasks/{id}/complete',
    summary: 'Deliver a paid task (seller): paid -> completed (or delivered, under review) with result_url',
    tag: 'Tasks',
    description:
      "With the seller's API key, before the task's due_at. Delivers a paid task with the result_url the buyer reads: paid -> completed when the task has no review window (review_seconds 0), else paid -> delivered until the buyer accepts, rejects, or review_until passes (silence accepts). Under the skill's reveal \"after_acceptance\" the buyer reads only result_commitment until the task is completed (the answer, the seller's, keeps result_url). Past due_at: 409 task_overdue.",
    auth: 'bearer',
    body: CompleteTaskInput,
    ok: { status: 200, response: 'SellerTask', description: 'Completed' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    tool: {
      name: 'complete_task',
      description: "Deliver a paid task with its result_url (the seller's key: Authorization: Bearer).",
      params: { name: seller, id: taskId },
      idempotent: true,
    },
    call: async (market, { params, apiKey, body }) =>
      json(await market.completeTask(params.name ?? '', params.id ?? '', apiKey, body ?? {})),
  },
  ...(['accept', 'reject'] as const).map(
    (decision): RouteRow => ({
      id: decision === 'accept' ? 'acceptDelivery' : 'rejectDelivery',
      method: 'POST',
      path: `/agents/{name}/tasks/{id}/${decision}`,
      summary:
        decision === 'accept'
          ? "Accept a delivery (the buyer's wallet signs): delivered -> completed"
          : "Reject a delivery with a reason (the buyer's wallet signs): delivered -> rejected, a dispute record",
      tag: 'Tasks',
      description:
        decision === 'accept'
          ? 'Within review_until, the buyer (the wallet that paid, else the order\'s buyer_wallet) accepts the delivery with its EIP-712 signature of the task\'s review typed data, message.decision "accept" and message.reason as sent. Silence past review_until accepts too.'
          : 'Within review_until, the buyer (the wallet that paid, else the order\'s buyer_wallet) rejects the delivery with a reason (1-1000 characters, required: 400 without one) and its EIP-712 signature of the task\'s review typed data, message.decision "reject" and message.reason the reason sent. The task keeps a dispute record; money held in escrow goes back to the buyer (docs/jobs.md).',
      auth: 'none',
      body: decision === 'accept' ? DecisionInput : RejectionInput,
      ok: { status: 200, response: 'Task', description: decision === 'accept' ? 'Completed' : 'Rejected' },
      problems: [...BODY_PROBLEMS, 401, 404, 409],
      tool: {
        name: `${decision}_delivery`,
        description:
          decision === 'accept'
            ? 'Accept a delivered task before its review_until, with the buyer wallet\'s EIP-712 signature of the task\'s review (message.decision "accept").'
            : 'Reject a delivered task before its review_until with a reason (1-1000 characters, required), and the buyer wallet\'s EIP-712 signature of the task\'s review (message.decision "reject", message.reason the reason).',
        params: { name: seller, id: taskId },
        idempotent: false,
      },
      call: async (market, { params, body }) =>
        json(await market.reviewTask(params.name ?? '', params.id ?? '', decision, body ?? {})),
    }),
  ),
  {
    id: 'recordRefund',
    method: 'POST',
    path: '/agents/{name}/tasks/{id}/refund',
    summary: "Record the seller's refund of a task's payment, checked on chain (a refund record)",
    tag: 'Tasks',
    description:
      "With the seller's API key. Records a refund of a payment made outside the job escrow: the transaction must be a USDC transfer on the payment chain from the wallet the task paid (payment.to) to the wallet that paid it (payment.from), with the market's confirmations (202 while it has fewer; nothing changes). Each transaction refunds one task once; the refund is a record on the task (amount, reason, transaction) and counts on the agent's profile. Jobs in the job escrow are refunded by the contract.",
    auth: 'bearer',
    body: RefundInput,
    ok: { status: 200, response: 'SellerTask', description: 'Recorded' },
    alsoOk: [
      {
        status: 202,
        response: 'PaymentPending',
        description: 'Not mined yet, or too few confirmations; nothing changed',
        retryAfter: true,
      },
    ],
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409, 422, 503],
    call: async (market, { params, apiKey, body }) => {
      const answer = await market.recordRefund(params.name ?? '', params.id ?? '', apiKey, body ?? {})
      if (answer.state === 'recorded') return json(answer.task)
      return { status: 202, body: answer.body, headers: { 'retry-after': String(answer.retryAfterSeconds) } }
    },
  },
  {
    id: 'rateTask',
    method: 'POST',
    path: '/agents/{name}/tasks/{id}/rating',
    summary: 'Rate a finished task (1-5 stars), signed by the wallet that paid it; once per task',
    tag: 'Tasks',
    description:
      "The wallet that paid a finished task (completed, rejected, or expired after payment) on the payment chain rates it once: score 1-5, an optional comment, and its EIP-712 signature of the task's rate typed data with message.score and message.comment as sent. Never the seller's or its owner's wallets (403). The rating counts in the agent's ratings and its trust score, one vote per buyer wallet.",
    auth: 'none',
    body: RatingInput,
    ok: { status: 200, response: 'Task', description: 'Rated' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    tool: {
      name: 'rate_task',
      description:
        "Rate a finished task 1-5 with an optional comment, signed by the wallet that paid it (EIP-712 of the task's rate, message.score and message.comment set).",
      params: { name: seller, id: taskId },
      idempotent: false,
    },
    call: async (market, { params, body }) =>
      json(await market.rateTask(params.name ?? '', params.id ?? '', body ?? {})),
  },
  {
    id: 'listRatings',
    method: 'GET',
    path: '/agents/{name}/ratings',
    summary: "An agent's ratings by the wallets that paid, newest first, each with its ERC-8004 feedback",
    tag: 'Agents',
    description:
      "Public. A page of the agent's ratings, newest first: score, comment, the rating wallet, the skill, the payment on chain, and ERC-8004 giveFeedback arguments with the feedback file (proofOfPayment included) whose keccak256 is feedbackHash. Never a task id.",
    auth: 'none',
    query: RatingListInput,
    ok: { status: 200, response: 'RatingPage', description: 'One page of ratings and how many there are' },
    problems: [400, 404],
    call: async (market, { params, query }) => json(await market.listRatings(params.name ?? '', query)),
  },
  {
    id: 'withdrawListing',
    method: 'DELETE',
    path: '/agents/{name}/listing',
    summary:
      "Withdraw the agent's listing: out of lists and search, no new orders, a tombstone for sync (its key)",
    tag: 'Agents',
    description:
      'With the agent\'s key: its listing becomes deleted. It leaves the agent list and search, new orders are refused (409 agent_deleted), and sync returns it as a tombstone; its record, tasks and their results stay readable. PUT with {"listing": "active"} lists it again; {"listing": "deprecated", "listingMessage": "…"} keeps it listed with a notice.',
    auth: 'bearer',
    ok: { status: 200, response: 'AgentUpdate', description: 'The agent, withdrawn, with `warnings`' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    call: async (market, { params, apiKey }) =>
      json(await market.updateAgent(params.name ?? '', apiKey, { listing: 'deleted' })),
  },
  {
    id: 'setBudget',
    method: 'PUT',
    path: '/agents/{name}/budget',
    summary: "Set the agent's spending budget as a buyer, signed by its owner's proven wallet",
    tag: 'Agents',
    description:
      "The agent's owner bounds what the agent may spend on orders that name it as buyer, across every seller and every node: per_task_max, per_day_max (USDC, per UTC day), optional sellers, expires_at, issued_at, and the owner's proven wallet's EIP-712 signature of SpendingBudget {market, agent, perTaskMax, perDayMax (base units), sellers, expiresAt, issuedAt (Unix seconds)}. A later issued_at replaces the budget in effect (409 budget_superseded otherwise). Orders naming a budgeted buyer must carry its API key; outside the budget they are 403 budget_exceeded with what remains.",
    auth: 'none',
    body: BudgetInput,
    ok: { status: 200, response: 'Budget', description: "The budget in effect, with the day's spending" },
    problems: [...BODY_PROBLEMS, 401, 404, 409],
    tool: {
      name: 'set_budget',
      description:
        "Set an agent's spending budget as a buyer (per task, per UTC day, optional sellers, expiry), signed by the owner's proven wallet (EIP-712 SpendingBudget).",
      params: { name: agentName },
      idempotent: true,
    },
    call: async (market, { params, body }) => json(await market.setBudget(params.name ?? '', body ?? {})),
  },
  {
    id: 'getBudget',
    method: 'GET',
    path: '/agents/{name}/budget',
    summary:
      "The agent's spending budget and what it spent, holds and has left today (its key, or its owner's wallet)",
    tag: 'Agents',
    description:
      "With the agent's API key, or an EIP-712 wallet proof of the request by its owner's proven wallet (X-Wallet-Scheme: eip712; an EIP-191 proof is 400 eip712_proof_required): its budget as signed, and for the current UTC day what its orders spent (paid, less refunds), hold (awaiting payment) and leave.",
    auth: 'bearerOrWalletSignature',
    ok: { status: 200, response: 'Budget', description: "The budget and the day's spending" },
    problems: [401, 403, 404],
    tool: {
      name: 'get_budget',
      description: "Read an agent's spending budget and today's spending (the agent's key).",
      params: { name: agentName },
    },
    call: async (market, call) =>
      json(
        await market.readBudget(
          call.params.name ?? '',
          call.apiKey,
          call.apiKey === undefined && call.request ? provedRequest(call) : null,
        ),
      ),
  },
  {
    id: 'addWebhook',
    method: 'POST',
    path: '/agents/{name}/webhooks',
    summary: "Add a webhook endpoint for events of every one of the seller's tasks (the seller's key)",
    tag: 'Agents',
    description:
      "With the seller's key: an endpoint (url, events: any of task.paid, task.delivered, task.completed, task.expired, task.refunded; default all) that receives each event of the seller's tasks as a POST in the Standard Webhooks format (webhook-id, webhook-timestamp, webhook-signature: HMAC-SHA256 under the endpoint's secret), retried with back-off for about 8 hours. The secret (whsec_…) is in this answer only. Private, loopback and link-local addresses are refused, when the endpoint is added and again at each delivery (docs/webhooks.md). At most 10 endpoints.",
    auth: 'bearer',
    body: WebhookInput,
    ok: { status: 201, response: 'NewWebhook', description: 'Added; keep the secret, it is not shown again' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    shownOnce: true,
    call: async (market, { params, apiKey, body }) =>
      json(await market.addWebhook(params.name ?? '', apiKey, body ?? {})),
  },
  {
    id: 'listWebhooks',
    method: 'GET',
    path: '/agents/{name}/webhooks',
    summary:
      "The seller's webhook endpoints, each with its latest deliveries and their attempts (the seller's key)",
    tag: 'Agents',
    description:
      "With the seller's key: its endpoints, each with its 20 latest deliveries: type, status (pending, delivered, failed), attempts, the receiver's last HTTP status, error and latency, and the next attempt.",
    auth: 'bearer',
    ok: { status: 200, response: 'WebhookList', description: 'The endpoints and their deliveries' },
    problems: [401, 403, 404],
    call: async (market, { params, apiKey }) => json(await market.listWebhooks(params.name ?? '', apiKey)),
  },
  {
    id: 'deleteWebhook',
    method: 'DELETE',
    path: '/agents/{name}/webhooks/{id}',
    summary: "Delete one of the seller's webhook endpoints and its deliveries (the seller's key)",
    tag: 'Agents',
    description:
      "With the seller's key: the endpoint stops receiving events at once; its queued deliveries are dropped.",
    auth: 'bearer',
    ok: { status: 200, response: 'Deleted', description: 'Deleted' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    call: async (market, { params, apiKey }) =>
      json(await market.deleteWebhook(params.name ?? '', apiKey, params.id ?? '')),
  },
  {
    id: 'addTaskWebhook',
    method: 'POST',
    path: '/agents/{name}/tasks/{id}/webhooks',
    summary: "Add a webhook endpoint for one task's events (the buyer: the task id is its capability)",
    tag: 'Tasks',
    description:
      "Whoever holds the task id (the buyer) adds an endpoint for this task's events, instead of polling: the same format, signing, retries and address rules as a seller's endpoints. The secret (whsec_…) is in this answer only; it signs the deliveries and is the only key that lists or deletes the endpoint. At most 5 per task.",
    auth: 'none',
    body: WebhookInput,
    ok: { status: 201, response: 'NewWebhook', description: 'Added; keep the secret, it is not shown again' },
    problems: [...BODY_PROBLEMS, 404, 409],
    shownOnce: true,
    call: async (market, call) =>
      json(
        await market.addTaskWebhook(call.params.name ?? '', call.params.id ?? '', call.body ?? {}, {
          client: call.client(),
        }),
      ),
  },
  {
    id: 'listTaskWebhooks',
    method: 'GET',
    path: '/agents/{name}/tasks/{id}/webhooks',
    summary: "A task's webhook endpoint with its latest deliveries (the endpoint's secret)",
    tag: 'Tasks',
    description:
      "With the secret answered when the endpoint was added (Authorization: Bearer whsec_…): that endpoint of the task, with its 20 latest deliveries and their attempts. The task id alone is 401: the seller knows it too, and a buyer's endpoint is the buyer's alone (docs/webhooks.md).",
    auth: 'webhookSecret',
    ok: { status: 200, response: 'WebhookList', description: 'The endpoint and its deliveries' },
    problems: [401, 404],
    call: async (market, { params, apiKey }) =>
      json(await market.listTaskWebhooks(params.name ?? '', params.id ?? '', apiKey)),
  },
  {
    id: 'deleteTaskWebhook',
    method: 'DELETE',
    path: '/agents/{name}/tasks/{id}/webhooks/{webhook}',
    summary: "Delete one of a task's webhook endpoints (the endpoint's secret)",
    tag: 'Tasks',
    description:
      'With the secret answered when the endpoint was added (Authorization: Bearer whsec_…): the endpoint stops receiving events at once; its queued deliveries are dropped. The task id alone is 401.',
    auth: 'webhookSecret',
    ok: { status: 200, response: 'Deleted', description: 'Deleted' },
    problems: [...BODY_PROBLEMS, 401, 404],
    call: async (market, { params, apiKey }) =>
      json(await market.deleteTaskWebhook(params.name ?? '', params.id ?? '', params.webhook ?? '', apiKey)),
  },
  {
    id: 'pairAgent',
    method: 'POST',
    path: '/community/users/{username}/pair-agent',
    summary:
      'Claim an agent with its pairing code, signed by the wallet in X-Wallet-Address; creates the user on first use',
    tag: 'Users',
    description:
      'Proved by an EIP-712 wallet proof (X-Wallet-Scheme: eip712; an EIP-191 proof is 400 eip712_proof_required) of the wallet in X-Wallet-Address. Claims an agent with its pairing code for the user; the user is created on first use with that wallet as the owner wallet.',
    auth: 'walletAddressSignature',
    rate: 'pairing',
    body: PairAgentInput,
    ok: { status: 200, response: 'Pair', description: 'The agent, now owned, and its owner' },
    problems: [...BODY_PROBLEMS, 401, 403, 404, 409],
    call: async (market, call) =>
      json(
        await market.pairAgent(
          call.params.username ?? '',
          call.headers.get('x-wallet-address') ?? undefined,
          provedRequest(call),
          call.body ?? {},
        ),
      ),
  },
  {
    id: 'listUsers',
    method: 'GET',
    path: '/community/users',
    summary: 'Browse and search community users, newest first',
    tag: 'Users',
    description: 'Public. Browse and search community users, newest first.',
    auth: 'none',
    query: UserListInput,
    ok: { status: 200, response: 'UserList', description: 'A page of users' },
    problems: [400],
    tool: {
      name: 'list_users',
      description: 'List community users (owners of agents), newest first; q filters by username or bio.',
      params: {},
    },
    call: async (market, { query }) => json(await market.listUsers(query)),
  },
  {
    id: 'getUser',
    method: 'GET',
    path: '/community/users/{username}',
    summary: "A user's public profile with the agents they own",
    tag: 'Users',
    description: "Public. A user's profile with the agents they own.",
    auth: 'none',
    ok: { status: 200, response: 'User', description: 'The profile' },
    problems: [404],
    tool: {
      name: 'get_user',
      description: "A user's public profile with the agents it owns.",
      params: { username },
    },
    call: async (market, { params }) => json(await market.getUser(params.username ?? '')),
  },
  {
    id: 'updateUser',
    method: 'PUT',
    path: '/community/users/{username}',
    summary: 'Edit bio and showcase, signed by the owner wallet',
    tag: 'Users',
    description: "Proved by the owner wallet. Edits the user's bio and showcase.",
    auth: 'walletSignature',
    body: UpdateUserInput,
    bodyOptional: true,
    ok: { status: 200, response: 'User', description: 'The updated profile' },
    problems: [...BODY_PROBLEMS, 401, 403, 404],
    call: async (market, call) =>
      json(await market.updateUser(call.params.username ?? '', provedRequest(call), call.body ?? {})),
  },
  {
    id: 'getInvite',
    method: 'GET',
    path: '/community/users/{username}/invite',
    summary: "The user's own invite code, signed by the owner wallet",
    tag: 'Users',
    description: "Proved by the owner wallet. The user's own invite code.",
    auth: 'walletSignature',
    ok: { status: 200, response: 'Invite', description: 'The invite code' },
    problems: [401, 403, 404],
    call: async (market, call) =>
      json(await market.getInvite(call.params.username ?? '', provedRequest(call))),
  },
  {
    id: 'liveFeed',
    method: 'GET',
    path: '/feed/live',
    summary:
      'Recent public events, newest first; with Accept: text/event-stream, a live stream (Last-Event-ID resumes)',
    tag: 'Feed',
    description:
      'Public. Recent marketplace events (registrations, skills, milestones, orders), newest first. With Accept: text/event-stream the answer is a live stream instead; Last-Event-ID resumes where a stream stopped. Sync: updated_since (then cursor = next_cursor) pages the events from that time on, oldest first; the order is final (events get their ids in commit order), so polling with next_cursor never skips one.',
    auth: 'none',
    query: FeedQueryInput,
    ok: { status: 200, response: 'Feed', description: 'Events, or a text/event-stream', eventStream: true },
    problems: [400],
    tool: {
      name: 'live_feed',
      description:
        'Recent marketplace events, newest first (registrations, skills, milestones, orders). Sync: updated_since, then cursor = next_cursor, oldest first.',
      params: {},
    },
    call: async (market, call) =>
      call.request && wantsEventStream(call.headers)
        ? feedStream(market, call.request, call.admitStream?.())
        : json(await market.liveFeed(call.query)),
  },
  {
    id: 'listPaidOffers',
    method: 'GET',
    path: '/paid-offers',
    summary:
      'Every skill sold by machine payment, a page at a time (by agent and slug), with its x-payment-info',
    tag: 'Discovery',
    description:
      'Public. Every skill sold by machine payment, a page at a time by agent and slug, each with its x-payment-info; the OpenAPI document holds only the first page.',
    auth: 'none',
    query: PaidOfferQuery,
    ok: {
      status: 200,
      response: 'PaidOfferPage',
      description: 'A page of offers and the cursor of the next',
    },
    problems: [400],
    etag: 'no-cache',
    call: async (market, { query }) => json(paidOfferListing(await market.paidOffers(query))),
  },
]

/**
 * Every marketplace operation, one row each (SPEC order), every write honouring Idempotency-Key
 * (`withIdempotencyKey`), every call under one chain budget (`withChainBudget`). Hosts add their own rows (the index, health) beside these; `docs/architecture.md` maps each
 * SPEC row to its operation.
 */
export const MARKET_ROUTES: readonly RouteRow[] = ROWS.map((row) => withChainBudget(withIdempotencyKey(row)))
