import type { OrderMailRefusal } from '@agentmarket/core'
import type { MailOperationId } from '../../../packages/server/src/mail/operations.ts'

// What each sender may do with each mail operation, one cell each, written out. Rows are the operations of the order
// mailbox (packages/server/src/mail/operations.ts); tests/security/access/mail.test.ts sends one real SMTP message per
// cell and fails when an operation has no row, or a row misses a principal.
//
// The principals: who sends, and what it puts in the Agentmarket-Buyer headers (the credential mail carries). Every
// mail orders the shop's paid skill. `anonymous` a sender that never ordered, naming no agent; `earlierSender` the
// sender whose order is the thread `reply` quotes and the Message-ID `redelivery` repeats; `buyerAgent` names the
// buyer agent (whose owner set it a spending budget) with that agent's key; `otherAgentKey` names the buyer agent with
// another agent's key; `wrongKey` names it with a key that is nobody's; `noKey` names it without a key; `selfOrder`
// the shop naming itself with its own key; `unbudgetedAgent` names an agent without a budget and no key;
// `keyWithoutName` sends the buyer agent's key but names no agent.

/** Who sends: every principal the mail matrix has a column for. */
export const MAIL_PRINCIPALS = [
  'anonymous',
  'earlierSender',
  'buyerAgent',
  'otherAgentKey',
  'wrongKey',
  'noKey',
  'selfOrder',
  'unbudgetedAgent',
  'keyWithoutName',
] as const
/** One of them. */
export type MailPrincipal = (typeof MAIL_PRINCIPALS)[number]

/**
 * A task made for the agent the mail named (or nobody), its reply naming it alone; refused with a reply whose
 * X-Agentmarket-Problem is `problem`, nothing made; or a repeat: nothing made, no reply.
 */
export type MailOutcome =
  | { made: 'task' }
  | { made: 'nothing'; problem: OrderMailRefusal }
  | { made: 'nothing'; repeat: true }

const TASK: MailOutcome = { made: 'task' }
/** Naming a buyer agent that has a budget, without its own key: refused, nothing made. */
const KEY_REQUIRED: MailOutcome = { made: 'nothing', problem: 'buyer_key_required' }
const REPEAT: MailOutcome = { made: 'nothing', repeat: true }

/** A row: one cell per principal, in the order of MAIL_PRINCIPALS. */
const cells = (
  ...row: [
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
    MailOutcome,
  ]
): Record<MailPrincipal, MailOutcome> => {
  const [
    anonymous,
    earlierSender,
    buyerAgent,
    otherAgentKey,
    wrongKey,
    noKey,
    selfOrder,
    unbudgetedAgent,
    keyWithoutName,
  ] = row
  return {
    anonymous,
    earlierSender,
    buyerAgent,
    otherAgentKey,
    wrongKey,
    noKey,
    selfOrder,
    unbudgetedAgent,
    keyWithoutName,
  }
}

/**
 * MAIL_ACCESS[operation][principal]. Notes: naming an agent without a budget needs no key (as over HTTP: the name is
 * the buyer's label, and the order counts on no budget); a key without a name names nobody; a reply quoting another
 * sender's thread orders for its own sender only; a Message-ID is a repeat only from the sender that sent it.
 */
// biome-ignore format: a table, one column per principal
export const MAIL_ACCESS: Record<MailOperationId, Record<MailPrincipal, MailOutcome>> = {
  //                 anonymous  earlierSender  buyerAgent  otherAgentKey  wrongKey      noKey         selfOrder  unbudgetedAgent  keyWithoutName
  order:       cells(TASK,      TASK,          TASK,       KEY_REQUIRED,  KEY_REQUIRED, KEY_REQUIRED, TASK,      TASK,            TASK),
  reply:       cells(TASK,      TASK,          TASK,       KEY_REQUIRED,  KEY_REQUIRED, KEY_REQUIRED, TASK,      TASK,            TASK),
  redelivery:  cells(TASK,      REPEAT,        TASK,       KEY_REQUIRED,  KEY_REQUIRED, KEY_REQUIRED, TASK,      TASK,            TASK),
}
