import type { AgentStore, KvStore, MailStore, TaskStore } from '../../ports/Store.ts'
import type { ActionContext } from '../context.ts'
import { deliveryActions } from './deliverMail.ts'
import { receiveOrderMailAction } from './receiveOrderMail.ts'

export type { MailDeliveryOptions, MailDeliveryReport } from './deliverMail.ts'
export type { OrderMailResult } from './receiveOrderMail.ts'

/** Orders by e-mail and the outbox that carries every reply. */
export function mailActions(context: ActionContext<AgentStore & TaskStore & MailStore & KvStore>) {
  return {
    /** Takes an order e-mail: a task and a reply, or a reply that says what to fix; written at once. */
    receiveOrderMail: receiveOrderMailAction(context),
    ...deliveryActions(context),
  }
}
