import { lookup } from 'node:dns/promises'
import {
  isAddressLiteral,
  isPublicAddress,
  WEBHOOK_TIMEOUT_MS,
  type WebhookTransport,
} from '@agentmarket/core'

/** Resolves a host name to every address it has. */
export type Resolve = (host: string) => Promise<string[]>

const lookupAll: Resolve = async (host) => (await lookup(host, { all: true })).map((found) => found.address)

/** Fails after `ms` with `message`, whichever settles first. */
const within = <T>(work: Promise<T>, ms: number, message: string): Promise<T> =>
  Promise.race([work, new Promise<never>((_, fail) => setTimeout(() => fail(new Error(message)), ms))])

/**
 * The addresses a webhook to `host` may go to: the literal itself or every address its name resolves to now, each
 * checked public unless `allowPrivate`. Errors say what was refused, never which private address a name has.
 */
async function checkedAddresses(host: string, allowPrivate: boolean, resolve: Resolve): Promise<string[]> {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host
  // One answer for a name that does not resolve and one that resolves privately: last_error must not tell an
  // endpoint's owner which internal names exist.
  const refused = new Error('refused: the host does not resolve to public addresses only')
  const addresses = isAddressLiteral(bare)
    ? [bare]
    : await within(resolve(bare), 5_000, 'no answer').catch(() => {
        throw refused
      })
  if (addresses.length === 0) throw refused
  if (!allowPrivate && addresses.some((address) => !isPublicAddress(address))) throw refused
  return addresses
}

/**
 * Sends webhooks with fetch, under the SSRF rules: the host is resolved at send time and every address it has must
 * be public (unless `allowPrivate`: WEBHOOK_ALLOW_PRIVATE); plain HTTP is then sent to the address checked (with the
 * name in Host), so a name cannot resolve elsewhere between the check and the connection; HTTPS keeps the name for
 * its certificate. Redirects are not followed (a 3xx is a failed attempt), the body of the answer is not read, and an
 * attempt ends after WEBHOOK_TIMEOUT_MS.
 */
export function fetchWebhookTransport(options: {
  allowPrivate: boolean
  resolve?: Resolve
  timeoutMs?: number
}): WebhookTransport {
  const { allowPrivate, resolve = lookupAll, timeoutMs = WEBHOOK_TIMEOUT_MS } = options
  return {
    async post(url, headers, body) {
      const target = new URL(url)
      const [address] = await checkedAddresses(target.hostname, allowPrivate, resolve)
      const sent = new URL(target)
      if (target.protocol === 'http:' && address)
        sent.hostname = address.includes(':') ? `[${address}]` : address
      const response = await fetch(sent, {
        method: 'POST',
        headers: { ...headers, host: target.host },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      }).catch((error: unknown) => {
        const timedOut = error instanceof Error && error.name === 'TimeoutError'
        throw new Error(timedOut ? `no answer within ${timeoutMs} ms` : 'the connection failed')
      })
      await response.body?.cancel().catch(() => {})
      return { status: response.status }
    },
  }
}
