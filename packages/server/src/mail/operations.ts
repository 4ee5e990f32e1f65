import type { InboundOrderMail } from '@agentmarket/core'

// The order mailbox as an interface: what a message to it can do, what of the message each operation reads, and who
// may. The access matrix (tests/security/access/mail.test.ts) has one real SMTP message per operation and principal
// and fails when an operation has no cells; the check at the end of this file fails the type check when the decoded
// mail (core InboundOrderMail) carries a field no operation claims.

/** The headers naming the buyer agent a mail orders for, and that agent's API key (its credential by mail). */
export const BUYER_HEADERS = { name: 'agentmarket-buyer', key: 'agentmarket-buyer-key' } as const

/** One thing a mail to the order mailbox does. */
export type MailOperation = {
  /** What it does, in a line. */
  summary: string
  /** The fields of the decoded mail it acts on. */
  fields: readonly (keyof InboundOrderMail)[]
  /** Who may, and with what: the cells of the matrix hold each principal to it. */
  who: string
}

/**
 * Every operation reachable by mail. A reply's quoted thread and a redelivered Message-ID are operations too: each is
 * something a sender controls, and neither may reach a task the sender did not order.
 */
export const MAIL_OPERATIONS = {
  order: {
    summary:
      'Orders the skill the subject names with the JSON body as params (createTask); the reply says what was made or why not.',
    fields: ['from', 'subject', 'text', 'buyer'],
    who: `Any sender its domain vouches for (MAIL_AUTH); the reply goes to From alone. Naming a buyer agent (${BUYER_HEADERS.name}) that has a spending budget takes that agent's own API key (${BUYER_HEADERS.key}); any other key, or none, is refused (buyer_key_required) and makes nothing.`,
  },
  reply: {
    summary:
      'A reply threaded under an earlier order or reply (In-Reply-To, References) is read as a new order.',
    fields: ['references'],
    who: 'As `order`: a thread is no credential; the reply never names the earlier task, whoever ordered it.',
  },
  redelivery: {
    summary:
      'A message whose sender and Message-ID were taken before changes nothing and is not answered again.',
    fields: ['messageId'],
    who: "Only the same sender's Message-ID is a repeat: another sender naming it orders as `order`.",
  },
} as const satisfies Record<string, MailOperation>

/** The id of one mail operation. */
export type MailOperationId = keyof typeof MAIL_OPERATIONS

/** The fields of the decoded mail that no operation claims (none, or the type check below fails). */
type Unclaimed = Exclude<keyof InboundOrderMail, (typeof MAIL_OPERATIONS)[MailOperationId]['fields'][number]>
/** Compiles only while every field of InboundOrderMail is claimed by an operation. */
export const EVERY_MAIL_FIELD_CLAIMED: [Unclaimed] extends [never] ? true : Unclaimed = true
