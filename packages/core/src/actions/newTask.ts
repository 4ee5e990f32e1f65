import type { AgentRecord } from '../Agent.ts'
import { generateId } from '../Credentials.ts'
import { ConflictError, InvalidInputError } from '../errors.ts'
import { feedEvents } from '../events.ts'
import type { FeedEventInput } from '../Feed.ts'
import { jobIdOf } from '../payments/JobEscrow.ts'
import type { SellerSkill } from '../ports/Store.ts'
import { paramsProblems } from '../SkillInputSchema.ts'
import { findSkill, type TaskRecord, UNPAID_TASK_TTL_MS } from '../Task.ts'
import type { CreateTaskInput } from '../TaskInput.ts'
import { closestName } from '../Validation.ts'
import type { ActionPorts } from './context.ts'

/** 400 unknown_skill: what the agent sells instead, by slug, so the next try can name one. */
function unknownSkill(agent: AgentRecord, asked: string): InvalidInputError {
  const slugs = agent.skills.map((skill) => `"${skill.slug}"`)
  const near = closestName(
    asked,
    agent.skills.flatMap((skill) => [skill.slug, skill.name]),
  )
  const hint = near ? ` Did you mean "${near}"?` : ''
  const sells = slugs.length ? `it sells ${slugs.join(', ')}` : 'it sells no skills yet'
  const detail = `"${agent.name}" has no skill named "${asked}"; ${sells}`
  return new InvalidInputError('unknown_skill', `The request body is invalid: /skill ${detail}.${hint}`, [
    { pointer: '/skill', detail },
  ])
}

/** 409 agent_deleted: a seller that withdrew its listing takes no new orders. */
function refuseWithdrawn(seller: SellerSkill['seller']) {
  if (seller.listing === 'deleted')
    throw new ConflictError(
      'agent_deleted',
      `"${seller.name}" withdrew its listing and takes no new orders; find another agent with GET /api/community/agents.`,
    )
}

/**
 * A new task for one of `agent`'s skills, not yet stored: `paid` at once for a free skill, else `pending_payment`
 * to the seller's wallet until it expires. `clientKey` scopes its Idempotency-Key and re-check budget ('' when the
 * host names no client). Throws `agent_deleted` (409), `unknown_skill` (400) or `seller_has_no_wallet` (409).
 */
export function newTaskRecord(
  ports: Pick<ActionPorts, 'clock' | 'random' | 'config'>,
  agent: AgentRecord,
  input: CreateTaskInput,
  clientKey = '',
): TaskRecord {
  const skill = findSkill(agent.skills, input.skill)
  if (skill) return newTaskOfSkill(ports, { seller: agent, skill }, input, clientKey)
  refuseWithdrawn(agent)
  throw unknownSkill(agent, input.skill)
}

/**
 * As `newTaskRecord`, for the skill the order names already found with its seller (the store's getSellerSkill):
 * throws `agent_deleted` (409), `invalid_params` (400) or `seller_has_no_wallet` (409).
 */
export function newTaskOfSkill(
  { clock, random, config }: Pick<ActionPorts, 'clock' | 'random' | 'config'>,
  { seller: agent, skill }: SellerSkill,
  input: CreateTaskInput,
  clientKey = '',
): TaskRecord {
  refuseWithdrawn(agent)
  if (skill.input) {
    const errors = paramsProblems(skill.input, input.params ?? {})
    const [first] = errors
    if (first)
      throw new InvalidInputError(
        'invalid_params',
        `The params do not fit the input of "${skill.slug}": ${first.pointer} ${first.detail}. Its JSON Schema is the skill's "input" (agent card, GET /api/community/agents/${agent.name}).`,
        errors,
      )
  }
  const price = skill.type === 'purchasable' ? (skill.priceBaseUnits ?? 0n) : 0n
  if (price > 0n && !agent.walletAddress) {
    throw new ConflictError(
      'seller_has_no_wallet',
      `"${agent.name}" has set no walletAddress, so its paid skills cannot be ordered yet.`,
    )
  }
  const now = clock.now()
  const free = price === 0n
  const id = generateId(random, 'task_')
  return {
    id,
    agentName: agent.name,
    skillName: skill.name,
    skillSlug: skill.slug,
    sla: skill.sla ?? 'best effort',
    status: free ? 'paid' : 'pending_payment',
    priceBaseUnits: price,
    payTo: free ? null : agent.walletAddress,
    params: input.params ?? null,
    buyer: input.buyer ?? null,
    buyerEmail: input.buyer_email ?? null,
    buyerWallet: input.buyer_wallet ?? null,
    payment: free
      ? { method: 'free', txHash: null, escrowTaskId: null, amountBaseUnits: 0n, from: null, at: now }
      : null,
    pendingCheck: null,
    resultUrl: null,
    idempotency: null,
    clientKey,
    expiresAt: free ? null : new Date(now.getTime() + (config.unpaidTaskTtlMs ?? UNPAID_TASK_TTL_MS)),
    createdAt: now,
    completedAt: null,
    slaSeconds: skill.slaSeconds,
    reviewSeconds: skill.reviewSeconds,
    reveal: skill.reveal,
    deliveredAt: null,
    outcome: null,
    entries: [],
    jobId: !free && config.chain.jobEscrowContract ? jobIdOf(id) : null,
    rating: null,
  }
}

/** The feed events of a task being stored: created, and paid too when it was paid with the order. */
export function eventsOfNewTask(task: TaskRecord): FeedEventInput[] {
  const events = [feedEvents.taskCreated(task)]
  if (task.payment && task.priceBaseUnits > 0n)
    events.push(feedEvents.taskPaid(task, task.payment.txHash, task.payment.at))
  return events
}
