import type { Clock, MarketplaceActions, OrderMailResult } from '@agentmarket/core'
import { inChainBudget, MAX_ORDER_MAIL_BYTES, systemClock } from '@agentmarket/core'
import type { RateClass, RateLimiter } from '@agentmarket/core/routes'
import { addressBucket, RateLimitedError } from '@agentmarket/core/routes'
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'
import { fallbackLogger, type Logger } from '../log.ts'
import {
  connectionSlots,
  DEFAULT_SMTP_CONNECTION_LIMITS,
  type SmtpConnectionLimits,
} from './connectionSlots.ts'
import { headerLimitRefusal, MimeLimitError, refusalText } from './headerLimits.ts'
import { readOrderMail } from './inbound.ts'
import { checkSender, type DnsResolver, dnsResolver, type MailAuthPolicy } from './senderAuth.ts'

/** Options of the inbound order mailbox. */
export type OrderListenerOptions = {
  market: MarketplaceActions
  /** The one address mail is accepted for (ORDER_MAILBOX). */
  mailbox: string
  port: number
  host: string
  /**
   * What to do with mail whose From domain does not authenticate (default enforce: refuse it with 550), and how its
   * DNS is asked: `resolver`, else `dnsServers`, else the system's servers.
   */
  mailAuth?: { policy: MailAuthPolicy; resolver?: DnsResolver; dnsServers?: string[] }
  /** Limits orders per client address, per sender and in total (RATE_LIMITS); null takes every message. */
  limiter?: RateLimiter | null
  /** Called after an order mail was taken and its reply is in the outbox. */
  onTaken?: (result: OrderMailResult) => void
  /** Where failures are logged. */
  logger?: Logger
  /** Connections per client address, in all, and a session's lifetime (default DEFAULT_SMTP_CONNECTION_LIMITS). */
  connections?: SmtpConnectionLimits
  /** What session lifetimes are measured with (default the system clock), and how often they are checked. */
  clock?: Clock
  sweepMs?: number
}

/** A running order mailbox. */
export type OrderListener = { port: number; close(): Promise<void> }

/** An SMTP reply to the client: `code` is the status it sees. */
function smtpError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code })
}

/** Spends one message of each bucket; past a limit, an SMTP 451 (the sending server tries again later). */
async function spendMail(limiter: RateLimiter, buckets: [RateClass, string][]) {
  try {
    for (const [rateClass, bucket] of buckets) await limiter.spend(rateClass, bucket)
  } catch (error) {
    if (!(error instanceof RateLimitedError)) throw error
    const { limit, windowSeconds } = error.policy
    const wait = error.decision.retryAfterSeconds
    throw smtpError(
      451,
      `4.7.1 Too many order e-mails (at most ${limit} per ${windowSeconds} s); try again in ${wait} s`,
    )
  }
}

async function readStream(stream: SMTPServerDataStream): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** Seconds a client may stay silent before its session is closed (421). */
const IDLE_SECONDS = 60

/** One admitted session: its connection slot, when it began, and whether a message of it is being taken now. */
type Admitted = { release: () => void; startedAt: number; taking: boolean; ended: boolean }

/**
 * The admitted sessions of a listener: a slot each (connectionSlots) and a lifetime nothing the client sends extends.
 * A session past its lifetime is ended at once, or, while a message of it is being taken, right after its answer.
 */
function sessionAdmission(limits: SmtpConnectionLimits, clock: Clock) {
  const slots = connectionSlots(limits)
  const sessions = new Map<string, Admitted>()
  const lifetimeMs = limits.sessionSeconds * 1000
  /** Marks `session` ended if it has outlived its lifetime and was not ended yet; says whether it did. */
  const expire = (session: Admitted, now: number) => {
    if (session.ended || now - session.startedAt < lifetimeMs) return false
    session.ended = true
    return true
  }
  return {
    /** Admits `session`, or says why it is refused. */
    admit(session: SMTPServerSession): string | null {
      const slot = slots.take(session.remoteAddress)
      if ('refused' in slot) return slot.refused
      const startedAt = clock.now().getTime()
      sessions.set(session.id, { release: slot.release, startedAt, taking: false, ended: false })
      return null
    },
    /** Gives the slot of a closed session back. */
    closed(session: SMTPServerSession) {
      sessions.get(session.id)?.release()
      sessions.delete(session.id)
    },
    /** Marks a message of session `id` as being taken; the function returned ends that and says if the session is due. */
    taking(id: string): () => boolean {
      const session = sessions.get(id)
      if (session) session.taking = true
      return () => {
        if (!session) return false
        session.taking = false
        return expire(session, clock.now().getTime())
      }
    },
    /** The ids of sessions past their lifetime that may be ended now, each returned once. */
    due(): string[] {
      const now = clock.now().getTime()
      return [...sessions].filter(([, session]) => !session.taking && expire(session, now)).map(([id]) => id)
    },
  }
}

/**
 * Starts the SMTP listener of orders by e-mail: mail for `mailbox` only (others 550), at most
 * MAX_ORDER_MAIL_BYTES (552) with a header within ORDER_MAIL_HEADER_LIMITS (552, checked before any parser reads it), from senders their domain authenticates (SPF, DKIM, DMARC; 550 otherwise, unless the
 * policy says report or off), and with a limiter at most so many messages per client address, per sender and in
 * total (451 past them). A message is answered 250 only once its task and reply are stored; a store failure
 * answers 451, so the sending server delivers it again later. Connections are limited per client address and in
 * all, with a reserve for addresses holding none (421 at the greeting past them), and a session ends (421) after
 * 60 s of silence or its lifetime, whichever comes first: NOOPs keep no connection open.
 * @example const listener = await startOrderListener({ market, mailbox: 'orders@market.example', port: 2525, host: '0.0.0.0' })
 */
export async function startOrderListener(options: OrderListenerOptions): Promise<OrderListener> {
  const { market, mailbox, onTaken, limiter = null, logger = fallbackLogger } = options
  const {
    connections: limits = DEFAULT_SMTP_CONNECTION_LIMITS,
    clock = systemClock(),
    sweepMs = 1000,
  } = options
  const admission = sessionAdmission(limits, clock)
  const { policy = 'enforce', dnsServers = [] } = options.mailAuth ?? {}
  const resolver = options.mailAuth?.resolver ?? (dnsServers.length > 0 ? dnsResolver(dnsServers) : undefined)
  const domain = mailbox.slice(mailbox.lastIndexOf('@') + 1)
  /** Refuses (enforce) or logs (report) a message whose From domain does not authenticate. */
  const authenticateSender = async (
    raw: Uint8Array,
    session: SMTPServerSession,
    envelopeFrom: string | null,
  ) => {
    if (policy === 'off') return
    const origin = { ip: session.remoteAddress, helo: session.hostNameAppearsAs, envelopeFrom }
    const check = await checkSender(raw, origin, { mta: domain, resolver })
    if (check.authenticated) return
    logger.warn('order mail sender not authenticated', { policy, result: check.summary })
    if (policy === 'report') return
    if (check.temporary)
      throw smtpError(451, '4.7.0 The sender could not be checked now (DNS); try again later')
    throw smtpError(
      550,
      '5.7.1 The From address is not authenticated by its domain (SPF, DKIM, DMARC); orders are taken only from mail its domain vouches for',
    )
  }
  const take = async (raw: Uint8Array, stream: SMTPServerDataStream, session: SMTPServerSession) => {
    if (stream.sizeExceeded)
      throw smtpError(552, `5.3.4 Message too big: the limit is ${MAX_ORDER_MAIL_BYTES} bytes`)
    // Before any parser: mailauth and postal-mime cost about 10 µs a byte of addresses.
    const refusal = headerLimitRefusal(raw)
    if (refusal) throw smtpError(552, refusalText(refusal))
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address || null : null
    await authenticateSender(raw, session, envelopeFrom)
    const mail = await readOrderMail(raw, envelopeFrom, mailbox).catch((error) => {
      if (error instanceof MimeLimitError) throw smtpError(552, refusalText(error.refusal))
      throw smtpError(554, '5.6.0 The message is not readable MIME')
    })
    if ('skip' in mail) return `2.0.0 Message accepted without reply (${mail.skip})`
    // The sender is whom the reply goes to: one address cannot be sent more replies than a buyer orders.
    if (limiter) await spendMail(limiter, [['mail', `sender:${mail.from.toLowerCase()}`]])
    // One chain budget for the order, as for an HTTP request: a frozen RPC holds the SMTP session one budget at most.
    const result = await inChainBudget(market.config.chain.requestBudgetMs, () =>
      market.receiveOrderMail(mail),
    )
    onTaken?.(result)
    // No task id: it is a read credential, and this answer crosses the network in clear into the sender's logs.
    if (result.outcome === 'task') return '2.0.0 Order taken; the reply carries its task id'
    if (result.outcome === 'refused') return `2.0.0 Message taken; the reply explains why no order was placed`
    return '2.0.0 Already taken'
  }
  const server = new SMTPServer({
    name: domain,
    banner: 'agentmarket order mailbox',
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: MAX_ORDER_MAIL_BYTES,
    rejectOversized: true,
    // The library's own count includes connections in the 100 ms before onConnect admits or refuses them, so its
    // limit is only a backstop on descriptors: admission per address and in all is sessionAdmission's.
    maxClients: limits.total * 2,
    socketTimeout: IDLE_SECONDS * 1000,
    // Nothing reads the client's PTR name, and its lookup would let the client's DNS delay every connection.
    disableReverseLookup: true,
    maxRecipients: 10,
    logger: false,
    onConnect(session, callback) {
      const refused = admission.admit(session)
      // RFC 5321 4.2: a 421 greeting names the server, like the 220 it replaces.
      callback(refused === null ? null : smtpError(421, `${domain} ${refused}`))
    },
    onClose(session) {
      admission.closed(session)
    },
    onMailFrom(_address, session, callback) {
      if (!limiter) return callback()
      const client = `address:${addressBucket(session.remoteAddress)}`
      spendMail(limiter, [
        ['mail', client],
        ['mail_total', 'all'],
      ]).then(() => callback(), callback)
    },
    onRcptTo(address, _session, callback) {
      if (address.address.toLowerCase() === mailbox.toLowerCase()) return callback()
      callback(smtpError(550, `5.1.1 <${address.address}>: no such mailbox; orders go to <${mailbox}>`))
    },
    onData(stream, session, callback) {
      readStream(stream).then(
        (raw) => {
          const finished = admission.taking(session.id)
          take(raw, stream, session)
            .then(
              (message) => callback(null, message),
              (error: Error & { responseCode?: number }) => {
                if (error.responseCode) return callback(error)
                logger.error('order mail not taken', { session: session.id }, error)
                callback(smtpError(451, '4.3.0 The order could not be stored; please try again later'))
              },
            )
            .finally(() => finished() && end(session.id))
        },
        // The client left (or its session ended) in the middle of the message: nothing was taken.
        () => callback(smtpError(451, '4.4.2 The message did not arrive in full; please send it again')),
      )
    },
  })
  /** Ends session `id` with a 421: its lifetime is over. */
  const end = (id: string) => {
    for (const connection of server.connections)
      if (connection.id === id)
        connection.send(
          421,
          `4.4.2 ${domain} Session time limit (${limits.sessionSeconds} s) reached; connect again to send more`,
        )
  }
  const sweep = setInterval(() => {
    for (const id of admission.due()) end(id)
  }, sweepMs)
  sweep.unref()
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
    close: () => {
      clearInterval(sweep)
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
