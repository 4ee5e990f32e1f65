import type { MailMessage } from '../OrderMail.ts'

/** Sends e-mail. Resolves once a relay accepted the message; rejects (to be retried) otherwise. */
export type Mailer = {
  /** Hands one message to the relay. */
  send(mail: MailMessage): Promise<void>
}
