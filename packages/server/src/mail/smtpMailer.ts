import type { Mailer } from '@agentmarket/core'
import { createTransport } from 'nodemailer'

/** A Mailer over an SMTP relay (`smtp://user:pass@host:port`, `smtps://…`) with nodemailer. */
export type SmtpMailer = Mailer & { close(): void }

/**
 * Sends mail through the relay at `url`. Timeouts are short so a dead relay fails an attempt quickly and the outbox
 * retries it later; a message the relay rejects for any recipient counts as not sent.
 * @example const mailer = smtpMailer('smtp://user:secret@mail.example:587')
 */
export function smtpMailer(url: string): SmtpMailer {
  const transport = createTransport({
    url,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
  })
  return {
    async send(mail) {
      const info = await transport.sendMail({
        from: mail.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        messageId: mail.messageId,
        inReplyTo: mail.inReplyTo ?? undefined,
        references: mail.references,
        headers: mail.headers,
      })
      if (info.rejected.length > 0) throw new Error(`the relay refused ${info.rejected.join(', ')}`)
    },
    close: () => transport.close(),
  }
}
