import {
  isAddressLiteral,
  isPublicAddress,
  WEBHOOK_PHASE_TIMEOUTS_MS,
  type WebhookTransport,
} from '@agentmarket/core'

/** How long each phase of an attempt may take (ms): resolving, connecting, the answer's first byte once connected. */
export type PhaseTimeouts = { resolve: number; connect: number; firstByte: number }

/** Resolves a host name to every address it has. */
export type Resolve = (host: string) => Promise<string[]>

// node:dns, node:net and node:tls load on the first delivery: loaded at start they cost about 8 ms of CPU (bench/CHANGES.md).
const lookupAll: Resolve = async (host) =>
  (await (await import('node:dns/promises')).lookup(host, { all: true })).map((found) => found.address)

let sockets: Promise<[typeof import('node:net'), typeof import('node:tls')]> | undefined
/** node:net and node:tls, loaded once. */
const socketModules = () => {
  sockets ??= Promise.all([import('node:net'), import('node:tls')])
  return sockets
}

/** Fails after `ms` with `message`, whichever settles first. */
const within = <T>(work: Promise<T>, ms: number, message: string): Promise<T> =>
  Promise.race([work, new Promise<never>((_, fail) => setTimeout(() => fail(new Error(message)), ms))])

/**
 * The addresses a webhook to `host` may go to: the literal itself or every address its name resolves to now, each
 * checked public unless `allowPrivate`. Errors say what was refused, never which private address a name has.
 */
async function checkedAddresses(
  host: string,
  allowPrivate: boolean,
  resolve: Resolve,
  resolveMs: number,
): Promise<string[]> {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host
  // One answer for a name that does not resolve and one that resolves privately: last_error must not tell an
  // endpoint's owner which internal names exist.
  const refused = new Error('refused: the host does not resolve to public addresses only')
  const addresses = isAddressLiteral(bare)
    ? [bare]
    : await within(resolve(bare), resolveMs, 'no answer').catch(() => {
        throw refused
      })
  if (addresses.length === 0) throw refused
  if (!allowPrivate && addresses.some((address) => !isPublicAddress(address))) throw refused
  return addresses
}

/** The longest answer head read (status line and headers); a receiver sending more fails the attempt. */
const MAX_HEAD_BYTES = 16 * 1024

/** The HTTP/1.1 request of one attempt: a POST that closes its connection after the answer. */
function requestText(target: URL, headers: Record<string, string>, body: string): string {
  const lines = Object.entries({
    ...headers,
    host: target.host,
    'content-length': String(Buffer.byteLength(body)),
  })
  lines.push(['connection', 'close'])
  const head = lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')
  return `POST ${target.pathname}${target.search} HTTP/1.1\r\n${head}\r\n${body}`
}

/**
 * POSTs `body` to `target` at `address` (over TLS for HTTPS, the name only as SNI and the certificate's identity) on a
 * fresh connection and answers
 * the status once the answer's head has arrived; its body is never read. Each phase has its own deadline, so a
 * receiver that accepts and never answers holds the attempt `firstByte` ms, not the whole timeout. (node:http and
 * fetch give no connect deadline, and Bun's node:http reads a whole body before its `response` event.)
 */
async function postOnce(
  target: URL,
  address: string | undefined,
  headers: Record<string, string>,
  body: string,
  { connect, firstByte }: PhaseTimeouts,
): Promise<{ status: number }> {
  const secure = target.protocol === 'https:'
  const bare = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname
  const port = Number(target.port || (secure ? 443 : 80))
  const [net, tls] = await socketModules()
  const socket = secure
    ? tls.connect({ host: address ?? bare, port, servername: isAddressLiteral(bare) ? undefined : bare })
    : net.connect({ host: address ?? bare, port })
  return new Promise((answer, fail) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    let head = ''
    const end = (error: Error | null, status = 0) => {
      clearTimeout(timer)
      socket.destroy()
      if (error) fail(error)
      else answer({ status })
    }
    const deadline = (ms: number, message: string) => {
      clearTimeout(timer)
      timer = setTimeout(() => end(new Error(message)), ms)
    }
    deadline(connect, `could not connect within ${connect} ms`)
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      deadline(firstByte, `no answer within ${firstByte} ms`)
      socket.write(requestText(target, headers, body))
    })
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      const status = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n/.exec(head)
      if (head.includes('\r\n\r\n'))
        end(status ? null : new Error('the answer is not HTTP'), Number(status?.[1]))
      else if (head.length > MAX_HEAD_BYTES) end(new Error("the answer's head is too large"))
    })
    socket.on('error', () => end(new Error('the connection failed')))
    socket.on('close', () => end(new Error('the connection closed before an answer')))
  })
}

/**
 * Sends webhooks under the SSRF rules: the host is resolved at send time and every address it has must be public
 * (unless `allowPrivate`: WEBHOOK_ALLOW_PRIVATE); HTTP and HTTPS are then sent to the address checked (the name in
 * Host, and for HTTPS in SNI and the certificate checked), so a name cannot resolve elsewhere between the check and
 * the connection (DNS rebinding). Redirects are not followed (a 3xx is a failed attempt), the body of the answer is not read, and each
 * phase has its deadline (WEBHOOK_PHASE_TIMEOUTS_MS: resolve 2 s, connect 3 s, first byte 5 s; `timeoutMs` sets the
 * first byte's), within WEBHOOK_TIMEOUT_MS in all.
 */
export function fetchWebhookTransport(options: {
  allowPrivate: boolean
  resolve?: Resolve
  timeoutMs?: number
}): WebhookTransport {
  const { allowPrivate, resolve = lookupAll } = options
  const timeouts: PhaseTimeouts = {
    ...WEBHOOK_PHASE_TIMEOUTS_MS,
    ...(options.timeoutMs !== undefined && { firstByte: options.timeoutMs }),
  }
  return {
    async post(url, headers, body) {
      const target = new URL(url)
      const [address] = await checkedAddresses(target.hostname, allowPrivate, resolve, timeouts.resolve)
      return postOnce(target, address, headers, body, timeouts)
    },
  }
}
