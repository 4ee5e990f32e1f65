import type { MarketplaceActions, OrderMailResult } from '@agentmarket/core'
import { MAX_ORDER_MAIL_BYTES } from '@agentmarket/core'
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'
import { fallbackLogger, type Logger } from '../log.ts'
import { readOrderMail } from './inbound.ts'

/** Options of the inbound order mailbox. */
export type OrderListenerOptions = {
  market: MarketplaceActions
  /** The one address mail is accepted for (ORDER_MAILBOX). */
  mailbox: string
  port: number
  host: string
  /** Called after an order mail was taken and its reply is in the outbox. */
  onTaken?: (result: OrderMailResult) => void
  /** Where failures are logged. */
  logger?: Logger
}

/** A running order mailbox. */
export type OrderListener = { port: number; close(): Promise<void> }

/** An SMTP reply to the client: `code` is the status it sees. */
function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code })
}

async function readStream(stream: SMTPServerDataStream): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/**
 * Starts the SMTP listener of orders by e-mail: mail for `mailbox` only (others 550), at most
 * MAX_ORDER_MAIL_BYTES (552). A message is answered 250 only once its task and reply are stored; a store failure
 * answers 451, so the sending server delivers it again later.
 * @example const listener = await startOrderListener({ market, mailbox: 'orders@market.example', port: 2525, host: '0.0.0.0' })
 */
export async function startOrderListener(options: OrderListenerOptions): Promise<OrderListener> {
  const { market, mailbox, onTaken, logger = fallbackLogger } = options
  const take = async (stream: SMTPServerDataStream, session: SMTPServerSession) => {
    const raw = await readStream(stream)
    if (stream.sizeExceeded)
      throw smtpError(552, `5.3.4 Message too big: the limit is ${MAX_ORDER_MAIL_BYTES} bytes`)
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address || null : null
    const mail = await readOrderMail(raw, envelopeFrom, mailbox).catch(() => {
      throw smtpError(554, '5.6.0 The message is not readable MIME')
    })
    if ('skip' in mail) return `2.0.0 Message accepted without reply (${mail.skip})`
    const result = await market.receiveOrderMail(mail)
    onTaken?.(result)
    if (result.outcome === 'task') return `2.0.0 Order taken: ${result.taskId}`
    if (result.outcome === 'refused') return `2.0.0 Message taken; the reply explains why no order was placed`
    return '2.0.0 Already taken'
  }
  const server = new SMTPServer({
    name: mailbox.slice(mailbox.lastIndexOf('@') + 1),
    banner: 'agentmarket order mailbox',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: MAX_ORDER_MAIL_BYTES,
    rejectOversized: true,
    maxClients: 50,
    maxRecipients: 10,
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.toLowerCase() === mailbox.toLowerCase()) return callback()
      callback(smtpError(550, `5.1.1 <${address.address}>: no such mailbox; orders go to <${mailbox}>`))
    },
    onData(stream, session, callback) {
      take(stream, session).then(
        (message) => callback(null, message),
        (error: Error & { responseCode?: number }) => {
          if (error.responseCode) return callback(error)
          logger.error('order mail not taken', {}, error)
          callback(smtpError(451, '4.3.0 The order could not be stored; please try again later'))
        },
      )
    },
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.on('error', (error) => logger.error('order mailbox error', {}, error))
  const address = server.server.address()
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
