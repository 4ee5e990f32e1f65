import type { MarketConfig } from './Config.ts'
import { formatAmount } from './Money.ts'
import type { TaskRecord } from './Task.ts'
import { nextSteps } from './TaskSteps.ts'

/** An order e-mail as the host received and decoded it (SPEC: the subject names the skill, the body is JSON). */
export type InboundOrderMail = {
  /** The Message-ID header; a host derives a stable one from the raw message when it has none. */
  messageId: string
  /** The sender's address: the task's buyer_email and where the reply goes. */
  from: string
  subject: string
  /** The decoded text/plain body; null when the message has only HTML or attachments. */
  text: string | null
  /** Message-IDs of the thread so far (the References header), for threading the reply. */
  references: string[]
  /**
   * The buyer agent the mail orders for (header Agentmarket-Buyer) and that agent's API key (Agentmarket-Buyer-Key,
   * needed when the agent has a spending budget); absent: the sender alone is the buyer.
   */
  buyer?: { name: string; key: string | null } | null
}

/** One e-mail to send: everything a mail transport needs. */
export type MailMessage = {
  from: string
  to: string
  subject: string
  text: string
  /** Stable across retries, so a receiver can drop a copy sent twice. */
  messageId: string
  inReplyTo: string | null
  references: string[]
  /** Extra headers, e.g. `Auto-Submitted` and the task id for agents that read mail. */
  headers: Record<string, string>
}

/** An e-mail in the outbox: written with the change that caused it, sent later with retries. */
export type OutboxEntry = {
  id: string
  mail: MailMessage
  createdAt: Date
  /** Send attempts started so far. */
  attempts: number
  /** When the next attempt may start (also the end of a running attempt's lease). */
  nextAttemptAt: Date
  /** While an attempt runs: the end of its lease (it counts as in flight until settled or then); else null. */
  leasedUntil: Date | null
  sentAt: Date | null
  /** Set when the outbox gave up on the entry. */
  failedAt: Date | null
  lastError: string | null
}

/**
 * Whose mail it is and where it goes, for the fair claim (FairQueue.ts): the recipient's address is the tenant, its
 * domain the endpoint. A domain whose mail servers hang holds only the domain's share; the addresses of one shared
 * domain (a large mail provider) are claimed round-robin, so one of them cannot fill the domain's share alone.
 */
export function mailQueueKeys(to: string): { tenant: string; endpoint: string } {
  const address = to.trim().toLowerCase()
  return { tenant: address, endpoint: address.slice(address.lastIndexOf('@') + 1) }
}

/** The outcome of one send attempt, as the outbox records it. */
export type MailOutcome =
  | { outcome: 'sent'; at: Date }
  | { outcome: 'retry'; at: Date; error: string; nextAttemptAt: Date }
  | { outcome: 'failed'; at: Date; error: string }

/** Why an order e-mail made no task; each comes back to the sender with a fix. */
export type OrderMailRefusal =
  | 'missing_subject'
  | 'unknown_skill'
  | 'ambiguous_skill'
  | 'no_text_body'
  | 'empty_body'
  | 'invalid_json'
  | 'invalid_params'
  | 'seller_has_no_wallet'
  | 'invalid_buyer'
  | 'buyer_key_required'
  | 'budget_exceeded'
  | 'agent_deleted'

/** A subject split into the skill asked for and, for `agent/skill`, the agent. */
export type OrderSubject = { agent: string | null; skill: string; whole: string }

/** The body read as params, or why it cannot be. */
export type OrderBody =
  | { ok: true; params: Record<string, unknown> }
  | { ok: false; reason: 'no_text_body' | 'empty_body' | 'invalid_json'; detail: string }

/** Largest inbound order e-mail, in bytes; bigger ones are refused with SMTP 552. */
export const MAX_ORDER_MAIL_BYTES = 256 * 1024

/**
 * Bounds on an order e-mail's header, checked on the raw bytes before any parser reads them (mailauth and postal-mime
 * cost about 10 µs a byte of addresses): the top-level header block in bytes, its fields, the addresses of its
 * address fields (From, Sender, Reply-To, To, Cc, Bcc and their Resent- forms), and the MIME parts' nesting and
 * headers in all. A message past one is refused with SMTP 552 naming the limit.
 */
export const ORDER_MAIL_HEADER_LIMITS = {
  headerBytes: 64 * 1024,
  fields: 1_000,
  addresses: 100,
  mimeDepth: 16,
} as const

/** The outbox stops retrying an entry this long after it was written. */
export const MAIL_GIVE_UP_MS = 3 * 24 * 60 * 60 * 1000

/** Delay before retrying a send after `attempts` failures: 1 s doubling to 10 min. */
export function mailRetryDelayMs(attempts: number): number {
  return Math.min(1_000 * 2 ** Math.min(Math.max(attempts - 1, 0), 20), 600_000)
}

// Run on text whose whitespace is already collapsed: every optional part is one character or a bounded run, and
// each repetition must consume a whole prefix, so the match is linear in the subject (no nested \s* to backtrack).
const REPLY_PREFIX = /^(?:(?:re|fwd?|aw|wg|sv|antw) ?(?:\[\d{1,9}\])? ?: ?)+/i

/** `text` with every run of whitespace made one space, trimmed. */
const collapsed = (text: string) => text.replace(/\s+/g, ' ').trim()

/** The subject without reply and forward prefixes (`Re:`, `Fwd:`, `AW:`), so a corrected reply orders too. */
export function stripReplyPrefixes(subject: string): string {
  return collapsed(subject).replace(REPLY_PREFIX, '').trim()
}

/** Reads the subject: `skill` or `agent/skill`. Null when nothing is left of it. */
export function parseOrderSubject(subject: string): OrderSubject | null {
  const whole = stripReplyPrefixes(subject)
  if (!whole) return null
  const match = /^([A-Za-z0-9_-]{2,50})\s*\/\s*(.+)$/.exec(whole)
  return match?.[1] && match[2]
    ? { agent: match[1], skill: match[2].trim(), whole }
    : { agent: null, skill: whole, whole }
}

const QUOTE_MARKS = /[\u201c\u201d\u201e\u2018\u2019]/

/** The text of a body without quoted reply lines (`> …`) and without a signature (after a `-- ` line). */
function ownText(text: string): string {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .replace(/\u00a0/g, ' ')
    .split('\n')
  const signature = lines.findIndex((line) => line === '-- ' || line === '--')
  const kept = signature === -1 ? lines : lines.slice(0, signature)
  return kept
    .filter((line) => !line.startsWith('>'))
    .join('\n')
    .trim()
}

/** `text` parsed as JSON, or the parser's complaint. */
function parseJson(text: string): { ok: true; value: unknown } | { ok: false; why: string } {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    return { ok: false, why: error instanceof Error ? error.message : 'it does not parse' }
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The params in a text body: one JSON object. Quoted reply lines and a signature are left out; when the rest is not
 * JSON as a whole (a reply's "On … wrote:" line, a greeting), the text from its first `{` to its last `}` is tried.
 */
export function parseOrderBody(text: string | null): OrderBody {
  if (text === null) {
    return {
      ok: false,
      reason: 'no_text_body',
      detail: 'The message has no plain-text part, so there is no JSON to read.',
    }
  }
  const body = ownText(text)
  if (!body) return { ok: false, reason: 'empty_body', detail: 'The message body is empty.' }
  let parsed = parseJson(body)
  const [first, last] = [body.indexOf('{'), body.lastIndexOf('}')]
  if (!parsed.ok && first !== -1 && last > first) parsed = parseJson(body.slice(first, last + 1))
  if (!parsed.ok) {
    const hint = QUOTE_MARKS.test(body)
      ? ' It contains curly quotes (“ ” ‘ ’): your mail program changed the straight quotes JSON needs; turn off smart quotes or paste the JSON as plain text.'
      : ''
    // The parser's message quotes the body's own tokens: a reply never repeats the sender's text.
    return { ok: false, reason: 'invalid_json', detail: `The body is not valid JSON.${hint}` }
  }
  if (!isObject(parsed.value)) {
    return {
      ok: false,
      reason: 'invalid_json',
      detail:
        'The body must be one JSON object, e.g. {"text": "hello"}; send {} for a skill that takes none.',
    }
  }
  return { ok: true, params: parsed.value }
}

const mailboxDomain = (mailbox: string) =>
  mailbox.includes('@') ? mailbox.slice(mailbox.lastIndexOf('@') + 1) || 'localhost' : 'localhost'

/** The Message-ID of an outbox entry's mail: stable, so retries and duplicates share it. */
export function outboxMessageId(entryId: string, mailbox: string): string {
  return `<${entryId}@${mailboxDomain(mailbox)}>`
}

const MAX_REFERENCES = 10

/**
 * A reply to `mail` from the order mailbox, threaded under it (In-Reply-To, References) and marked as automatic
 * (RFC 3834). Its subject is ours (`content.subject`), never the sender's: a forged sender cannot make the mailbox
 * carry its words to someone else.
 */
export function replyTo(
  mail: InboundOrderMail,
  entryId: string,
  mailbox: string,
  content: { subject: string; text: string; headers: Record<string, string> },
): MailMessage {
  return {
    from: mailbox,
    to: mail.from,
    subject: `Re: ${content.subject}`,
    text: content.text,
    messageId: outboxMessageId(entryId, mailbox),
    inReplyTo: mail.messageId,
    references: [...mail.references, mail.messageId].slice(-MAX_REFERENCES),
    headers: { 'Auto-Submitted': 'auto-replied', ...content.headers },
  }
}

/** How to order by e-mail, closing every reply. */
export function orderMailHelp(config: MarketConfig): string {
  return [
    'How to order by e-mail:',
    `- To: ${config.orderMailbox}`,
    '- Subject: the skill\'s name or slug, e.g. "Deep Research" or "deep-research"; write "agent/skill"',
    '  (e.g. "scout/deep-research") when more than one agent sells a skill of that name.',
    '- Body, as plain text: the JSON params of the skill, e.g. {"topic": "solar panels"}; {} when it takes none.',
    `Find agents and their skills: ${config.baseUrl}/api/community/agents`,
  ].join('\n')
}

/** The reply to an order that made a task: its id, how to pay, and the links to verify and poll. */
export function orderAcceptedText(task: TaskRecord, config: MarketConfig): string {
  const steps = nextSteps(task, config)
  const paid = task.status !== 'pending_payment'
  const lines = [
    paid
      ? `Your order is in: ${task.agentName} can start on it now.`
      : 'Your order is in. It waits for your payment.',
    '',
    `Task:   ${task.id}`,
    `Skill:  ${task.skillName} by ${task.agentName} (SLA: ${task.sla})`,
    `Status: ${task.status}`,
    `Price:  ${paid && task.priceBaseUnits === 0n ? 'free' : `${formatAmount(task.priceBaseUnits)} USDC`}`,
    '',
  ]
  if (!paid) {
    lines.push(
      '1. Pay',
      steps.pay,
      '',
      '2. Tell the marketplace which transaction paid (any HTTP client, e.g. curl):',
      steps.verify,
      'Content-Type: application/json',
      steps.verify_body,
      '',
      '3. Follow the task',
    )
  } else {
    lines.push('Follow the task')
  }
  lines.push(steps.check_status, '', `Keep the task id: ${task.id}. This mailbox sends one reply per order.`)
  return lines.join('\n')
}

/** The reply to an order that made no task: what was wrong, how to fix it, and how ordering works. */
export function orderRefusedText(detail: string, fix: string, config: MarketConfig): string {
  return [
    'Your order was not placed; nothing was created and nothing is owed.',
    '',
    `What was wrong: ${detail}`,
    `How to fix it: ${fix}`,
    '',
    orderMailHelp(config),
  ].join('\n')
}
