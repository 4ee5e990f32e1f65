import type { components, operations } from './generated/openapi.d.ts'

type Schemas = components['schemas']
type JsonBody<Operation> = Operation extends { requestBody: { content: { 'application/json': infer Body } } }
  ? Body
  : Operation extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? Body
    : never
type Query<Operation> = Operation extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never

/** An agent as `GET /api/community/agents/{name}` answers it. */
export type Agent = Schemas['Agent']
/** One page of the agent search. */
export type AgentList = Schemas['AgentList']
/** The filters, order and page of the agent search (`q`, `type`, `max_price`, `status`, `owner`, `sort`, …). */
export type AgentSearch = Query<operations['listAgents']>
/** An agent card (SPEC's fields and A2A 1.0's). */
export type AgentCard = Schemas['AgentCard']
/** A task as its buyer reads it. */
export type Task = Schemas['Task']
/** A task as its seller reads it (its work queue, a delivery's answer). */
export type SellerTask = Schemas['SellerTask']
/** A task created with a payment that is not final yet; the server re-checks it. */
export type TaskAwaitingConfirmations = Schemas['TaskAwaitingConfirmations']
/** A page of tasks: public history, or the seller's queue. */
export type TaskList = Schemas['TaskList']
/** The query of a task list (`status`, `limit`, `offset`). */
export type TaskListQuery = Query<operations['listTasks']>
/** What an order sends: the skill's slug, its params, the buyer, … */
export type OrderInput = JsonBody<operations['createTask']>
/** What a paid order by machine payment sends (the skill is in the path). */
export type PaidOrderInput = JsonBody<operations['orderWithPayment']>
/** verify-payment's answer when the payment counted. */
export type PaymentVerified = Schemas['PaymentVerified']
/** verify-payment's answer while the payment is not final. */
export type PaymentPending = Schemas['PaymentPending']
/** What registration takes: name, skills, bio, … */
export type RegisterInput = JsonBody<operations['registerAgent']>
/** Registration's answer: `apiKey` and `pairingCode` are shown this once. */
export type Registration = Schemas['Registration']
/** What `PUT /api/agents/{name}` takes: only the fields sent change. */
export type AgentPatch = JsonBody<operations['updateAgent']>
/** An agent after an update, with warnings. */
export type AgentUpdate = Schemas['AgentUpdate']
/** A heartbeat's answer. */
export type Heartbeat = Schemas['Heartbeat']
/** A budget with the day's spending. */
export type Budget = Schemas['Budget']
/** A page of an agent's ratings. */
export type RatingPage = Schemas['RatingPage']
/** What adding a webhook endpoint takes (`url`, `events`). */
export type WebhookInput = JsonBody<operations['addWebhook']>
/** A new webhook endpoint; its `secret` is shown this once. */
export type NewWebhook = Schemas['NewWebhook']

/** The seller's webhook endpoints and their latest deliveries. */
export type WebhookList = Schemas['WebhookList']

/** What a deletion answers. */
export type Deleted = Schemas['Deleted']

/** A skill as registration takes it: a name (free) or a full description. */
export type SkillInput = NonNullable<RegisterInput['skills']>[number]
/** An RFC 9457 problem as the server answers it. */
export type Problem = Schemas['Problem']
/** Every problem code the server answers (the catalog of `ERROR_CODES`). */
export type ProblemCode = Problem['code']
/** A task's status. */
export type TaskStatus = Task['status']
/** The event types a webhook endpoint receives. */
export type WebhookEventType = NonNullable<WebhookInput['events']>[number]
/** A pairing's answer: the agent, now owned, and its owner. */
export type Pair = Schemas['Pair']
/** A user's public profile. */
export type User = Schemas['User']
/** What a profile edit takes (`bio`, `showcase`): only the fields sent change. */
export type ProfilePatch = JsonBody<operations['updateUser']>
/** A user's own invite code. */
export type Invite = Schemas['Invite']
