import type { AgentRecord } from '../../Agent.ts'
import { generateId, hashSecret } from '../../Credentials.ts'
import { MarketError } from '../../errors.ts'
import {
  type InboundOrderMail,
  type OrderMailRefusal,
  type OrderSubject,
  type OutboxEntry,
  orderAcceptedText,
  orderRefusedText,
  parseOrderBody,
  parseOrderSubject,
  replyTo,
} from '../../OrderMail.ts'
import type { AgentStore, KvStore, MailStore, TaskStore } from '../../ports/Store.ts'
import { findSkill, type TaskRecord } from '../../Task.ts'
import { CreateTaskInput } from '../../TaskInput.ts'
import { taskPaths } from '../../TaskSteps.ts'
import { parseInput } from '../../Validation.ts'
import type { ActionContext } from '../context.ts'
import { eventsOfNewTask, newTaskRecord } from '../newTask.ts'
import { type OrderGuard, orderGuard } from '../tasks/budgetGuard.ts'

/** What became of an order e-mail. */
export type OrderMailResult =
  | { outcome: 'task'; taskId: string; agent: string; replyId: string }
  | { outcome: 'refused'; reason: OrderMailRefusal; replyId: string }
  | { outcome: 'duplicate' }

/** A refused order: why, and the reply's text parts. */
type Refusal = { reason: OrderMailRefusal; detail: string; fix: string }

/** A skill the order names, or why none can be chosen. */
type SkillChoice = { agent: AgentRecord; skill: string } | Refusal

const SELLERS_LISTED = 20

// A JSON pointer is repeated in a refusal only when it is short and plain: keys are the sender's own text.
const PLAIN_POINTER = /^[A-Za-z0-9_/-]{0,64}$/

/**
 * A validation message without the value it received (valibot ends some with `Received "…"`). Cut where the word
 * starts and trimmed in code: `/,?\s*received\b[\s\S]*$/` rescans every run of spaces a seller's enum holds.
 */
export function withoutReceivedValue(detail: string): string {
  const at = detail.search(/received\b/i)
  if (at === -1) return detail
  const kept = detail.slice(0, at).trimEnd()
  return kept.endsWith(',') ? kept.slice(0, -1) : kept
}

/** Why a mail naming a buyer agent (Agentmarket-Buyer) orders nothing for it, or null when the error is another's. */
function buyerRefusalOf(error: MarketError, buyer: string): Refusal | null {
  if (error.errors?.[0]?.pointer === '/buyer')
    return {
      reason: 'invalid_buyer',
      detail:
        'The Agentmarket-Buyer header is not an agent name (2-50 letters, digits, hyphens or underscores).',
      fix: 'Put the name of the agent you order for in Agentmarket-Buyer, or leave the header out.',
    }
  if (error.status === 401 || (error.status === 403 && error.code !== 'budget_exceeded'))
    return {
      reason: 'buyer_key_required',
      detail: `"${buyer}" has a spending budget, so an order naming it must carry its own API key.`,
      fix: "Add the header Agentmarket-Buyer-Key with that agent's API key, or order without Agentmarket-Buyer.",
    }
  if (error.code === 'budget_exceeded')
    return {
      reason: 'budget_exceeded',
      detail: error.message,
      fix: "Order less, wait until the budget's day resets, or ask the agent's owner for a larger budget.",
    }
  return null
}

/** The `receiveOrderMail` action: orders by e-mail. */
export function receiveOrderMailAction(context: ActionContext<AgentStore & TaskStore & MailStore & KvStore>) {
  const { store, config, clock, random } = context

  const unknownSkill = (subject: OrderSubject): Refusal => ({
    reason: 'unknown_skill',
    detail: subject.agent
      ? 'No skill has the name in your subject, and no agent of the "agent/skill" it names sells such a skill.'
      : 'No agent sells a skill with the name in your subject.',
    fix: `Put the exact name or slug of a skill in the subject. Search skills at ${config.baseUrl}/api/community/agents?q=<words>, or read an agent's skills at ${config.baseUrl}/api/agents/<name>/agent-card.json.`,
  })

  const ambiguous = (subject: OrderSubject, sellers: AgentRecord[]): Refusal => {
    const choices = sellers.map((agent) => {
      const skill = findSkill(agent.skills, subject.whole)
      return `  ${agent.name}/${skill?.slug ?? subject.whole}`
    })
    return {
      reason: 'ambiguous_skill',
      detail: `${sellers.length === SELLERS_LISTED ? 'Many' : sellers.length} agents sell a skill with the name in your subject.`,
      fix: `Write "agent/skill" in the subject to pick one, e.g.:\n${choices.join('\n')}`,
    }
  }

  /** The agent and skill the subject names: `agent/skill` first, then the whole subject across all agents. */
  const chooseSkill = async (subject: OrderSubject): Promise<SkillChoice> => {
    if (subject.agent) {
      const agent = await store.getAgent(subject.agent)
      if (agent && findSkill(agent.skills, subject.skill)) return { agent, skill: subject.skill }
    }
    const sellers = await store.findSkillSellers(subject.whole, SELLERS_LISTED)
    const [only] = sellers
    if (sellers.length === 1 && only) return { agent: only, skill: subject.whole }
    return sellers.length === 0 ? unknownSkill(subject) : ambiguous(subject, sellers)
  }

  /** The task the mail orders, or why it orders none. */
  const taskOf = async (
    mail: InboundOrderMail,
  ): Promise<{ task: TaskRecord; guard: OrderGuard } | Refusal> => {
    const subject = parseOrderSubject(mail.subject)
    if (!subject) {
      return {
        reason: 'missing_subject',
        detail: 'The subject is empty, so it names no skill.',
        fix: 'Put the name or slug of the skill you want in the subject.',
      }
    }
    const choice = await chooseSkill(subject)
    if (!('agent' in choice)) return choice
    const body = parseOrderBody(mail.text)
    if (!body.ok) {
      return {
        reason: body.reason,
        detail: body.detail,
        fix: 'Send the params of the skill as one JSON object in a plain-text body, e.g. {"topic": "solar panels"}, or {} when the skill takes none.',
      }
    }
    try {
      const input = parseInput(CreateTaskInput, {
        skill: choice.skill,
        params: body.params,
        buyer_email: mail.from,
        ...(mail.buyer && { buyer: mail.buyer.name }),
      })
      const task = newTaskRecord(context, choice.agent, input)
      // A buyer agent named by the mail is held to its budget as on every other channel (its key in a header).
      return { task, guard: await orderGuard(context, choice.agent, task, mail.buyer?.key ?? undefined) }
    } catch (error) {
      if (!(error instanceof MarketError)) throw error
      const buyerRefusal = buyerRefusalOf(error, mail.buyer?.name ?? '')
      if (buyerRefusal) return buyerRefusal
      if (error.code === 'agent_deleted')
        return {
          reason: 'agent_deleted',
          detail: error.message,
          fix: 'Order the skill from another agent: GET /api/community/agents lists them.',
        }
      if (error.code === 'seller_has_no_wallet') {
        return {
          reason: 'seller_has_no_wallet',
          detail: error.message,
          fix: "Order another agent's skill, or try again once this seller has published a wallet.",
        }
      }
      const first = error.errors?.[0]
      return {
        reason: 'invalid_params',
        detail: first
          ? `${PLAIN_POINTER.test(first.pointer) ? first.pointer || 'params' : 'params'}: ${withoutReceivedValue(first.detail)}.`
          : error.message,
        fix: 'Correct the JSON in the body and send the order again.',
      }
    }
  }

  const outboxEntry = (
    mail: InboundOrderMail,
    content: { subject: string; text: string; headers: Record<string, string> },
  ) => {
    const id = generateId(random, 'mail_')
    const now = clock.now()
    const entry: OutboxEntry = {
      id,
      mail: replyTo(mail, id, config.orderMailbox, content),
      createdAt: now,
      attempts: 0,
      nextAttemptAt: now,
      leasedUntil: null,
      sentAt: null,
      failedAt: null,
      lastError: null,
    }
    return entry
  }

  /**
   * Takes an order e-mail (SPEC: subject = skill, body = JSON params): a task plus a reply with its id, payment
   * instructions and links, or no task and a reply that says what to fix. The reply is written to the outbox in
   * the same transaction. A message delivered again (same sender and Message-ID) changes nothing.
   * @example await market.receiveOrderMail({ messageId: '<1@mail>', from: 'ann@example.com', subject: 'scout/deep-research', text: '{"topic":"x"}', references: [] })
   */
  /** Records a refused order mail once (its key) with the reply saying what to fix. */
  const refuse = async (mail: InboundOrderMail, key: string, refusal: Refusal): Promise<OrderMailResult> => {
    const reply = outboxEntry(mail, {
      subject: 'your order (not placed)',
      text: orderRefusedText(refusal.detail, refusal.fix, config),
      headers: { 'X-Agentmarket-Problem': refusal.reason },
    })
    const stored = await store.acceptOrderMail({
      key,
      receivedAt: clock.now(),
      task: null,
      events: [],
      reply,
    })
    return stored === 'duplicate'
      ? { outcome: 'duplicate' }
      : { outcome: 'refused', reason: refusal.reason, replyId: reply.id }
  }

  return async function receiveOrderMail(mail: InboundOrderMail): Promise<OrderMailResult> {
    const key = hashSecret(`${mail.from.toLowerCase()}\n${mail.messageId}`)
    const outcome = await taskOf(mail)
    if ('reason' in outcome) return refuse(mail, key, outcome)
    const { task, guard } = outcome
    const reply = outboxEntry(mail, {
      subject: `${task.agentName}/${task.skillSlug}`,
      text: orderAcceptedText(task, config),
      headers: {
        'X-Agentmarket-Task': task.id,
        'X-Agentmarket-Task-Url': taskPaths(config.baseUrl, task).self,
      },
    })
    const events = eventsOfNewTask(task)
    const stored = await store.acceptOrderMail({
      key,
      receivedAt: clock.now(),
      task,
      events,
      reply,
      ...(guard && { cap: guard.cap }),
    })
    if (stored === 'duplicate') return { outcome: 'duplicate' }
    if (stored === 'budget_exceeded')
      return refuse(mail, key, {
        reason: 'budget_exceeded',
        detail: `The order would take "${task.buyer}" past its spending budget for today.`,
        fix: "Order less, wait until the budget's day resets, or ask the agent's owner for a larger budget.",
      })
    context.feed.nudge()
    return { outcome: 'task', taskId: task.id, agent: task.agentName, replyId: reply.id }
  }
}
