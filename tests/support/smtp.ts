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
  headers?: Record<string, string>
}

/** Sends `message` to the SMTP server on `port` with nodemailer; resolves with its answer or rejects with its error. */
export async function sendMail(port: number, message: OrderMessage) {
  const transport = createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true })
  try {
    return await transport.sendMail(message)
  } finally {
    transport.close()
  }
}
