import { connect } from 'node:net'
import { createTransport } from 'nodemailer'
import PostalMime, { type Email } from 'postal-mime'
import { SMTPServer } from 'smtp-server'

/** A relay started in the test: every message it accepts, parsed, with its envelope. */
export type CaptureRelay = {
  port: number
  url: string
  messages: { envelopeTo: string[]; email: Email }[]
  /** Resolves with the first message (already received or still to come) that `match` accepts. */
  waitFor(match: (email: Email) => boolean, timeoutMs?: number): Promise<Email>
  /** Stops listening; `start` brings it back on the same port, keeping what it received. */
  stop(): Promise<void>
  start(): Promise<void>
}

/** Starts an SMTP relay on loopback that keeps what it receives (the far end of the marketplace's replies). */
export async function captureRelay(port: number): Promise<CaptureRelay> {
  const messages: CaptureRelay['messages'] = []
  let server: SMTPServer | null = null
  const listen = () => {
    const next = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth: (_auth, _session, callback) => callback(null, { user: 'relay-user' }),
      onData(stream, session, callback) {
        const chunks: Buffer[] = []
        stream.on('data', (chunk: Buffer) => chunks.push(chunk))
        stream.on('end', () => {
          PostalMime.parse(Buffer.concat(chunks)).then((email) => {
            messages.push({ envelopeTo: session.envelope.rcptTo.map((to) => to.address), email })
            callback()
          }, callback)
        })
      },
    })
    return new Promise<void>((resolve, reject) => {
      next.once('error', reject)
      next.listen(port, '127.0.0.1', () => {
        server = next
        resolve()
      })
    })
  }
  await listen()
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(match, timeoutMs = 15_000) {
      const started = performance.now()
      while (performance.now() - started < timeoutMs) {
        const found = messages.find(({ email }) => match(email))
        if (found) return found.email
        await Bun.sleep(25)
      }
      throw new Error(`no matching message reached the relay within ${timeoutMs} ms`)
    },
    async stop() {
      const running = server
      server = null
      if (running) await new Promise<void>((resolve) => running.close(() => resolve()))
    },
    start: listen,
  }
}

/** An order e-mail as a mail program would send it. */
export type OrderMessage = {
  from: string
  to: string
  subject: string
  text?: string
  html?: string
  messageId?: string
  /** The thread it answers: In-Reply-To and References. */
  inReplyTo?: string
  references?: string[]
  headers?: Record<string, string>
}

/**
 * Sends `message` to the SMTP server on `port` with nodemailer, from `localAddress` if given; resolves with its answer
 * or rejects with its error.
 */
export async function sendMail(port: number, message: OrderMessage, localAddress?: string) {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    ...(localAddress ? { localAddress } : {}),
  })
  try {
    return await transport.sendMail(message)
  } finally {
    transport.close()
  }
}

/** A raw SMTP connection driven line by line: what a client that never sends mail (or an attacker) does. */
export type SmtpSession = {
  /** The first reply (the greeting, or the refusal at connect). */
  greeting: Promise<string>
  /** Sends one command line (or lines) and resolves with its reply, or '' if the connection closes first. */
  command(line: string): Promise<string>
  /** Every reply line received so far. */
  replies: string[]
  /** Resolves once the server (or `close`) has closed the connection. */
  closed: Promise<void>
  close(): void
}

/** Opens a raw SMTP connection to 127.0.0.1:`port` from `localAddress` (any of 127/8 works on Linux loopback). */
export function smtpSession(port: number, localAddress = '127.0.0.1'): SmtpSession {
  const socket = connect({ host: '127.0.0.1', port, localAddress })
  const replies: string[] = []
  const waiting: ((line: string) => void)[] = []
  let buffer = ''
  let ended = false
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  closed.then(() => {
    ended = true
    for (const wake of waiting.splice(0)) wake('')
  })
  socket.on('error', () => {})
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('latin1')
    let newline = buffer.indexOf('\r\n')
    while (newline >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 2)
      replies.push(line)
      // A multi-line reply ("250-...") is answered by its last line ("250 ...").
      if (!/^\d{3}-/.test(line)) waiting.shift()?.(line)
      newline = buffer.indexOf('\r\n')
    }
  })
  /** The next complete reply; '' once the connection is closed. */
  const nextReply = () => new Promise<string>((resolve) => (ended ? resolve('') : waiting.push(resolve)))
  const greeting = nextReply()
  return {
    greeting,
    replies,
    closed,
    async command(line) {
      if (ended) throw new Error(`connection closed before ${line}`)
      const reply = nextReply()
      socket.write(`${line}\r\n`)
      return reply
    },
    close: () => socket.destroy(),
  }
}
