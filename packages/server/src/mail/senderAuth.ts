import { Resolver } from 'node:dns/promises'
import { authenticate } from 'mailauth'

/** What the order mailbox does with mail whose From domain does not authenticate (MAIL_AUTH). */
export type MailAuthPolicy = 'enforce' | 'report' | 'off'

/** A DNS lookup as mailauth asks for it (`dns.promises.resolve`'s shape); tests and hosts may pass their own. */
export type DnsResolver = (name: string, rrtype: string) => Promise<unknown>

/** A resolver asking only `servers` (MAIL_DNS_SERVERS), e.g. a local validating resolver. */
export function dnsResolver(servers: string[]): DnsResolver {
  const resolver = new Resolver()
  resolver.setServers(servers)
  return (name, rrtype) => resolver.resolve(name, rrtype)
}

/** Where a message came from, as the SMTP session saw it. */
export type SmtpOrigin = { ip: string; helo: string; envelopeFrom: string | null }

/** Whether a message's From domain is authenticated, and a summary for the log (results only, no address). */
export type SenderCheck = {
  authenticated: boolean
  /** A DNS failure: the answer may differ later, so the sender should try again (SMTP 451). */
  temporary: boolean
  summary: string
}

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1).toLowerCase()

/** DMARC's relaxed alignment without the public suffix list: the same domain, or one inside the other. */
const aligned = (author: string, identifier: string | undefined) => {
  const other = identifier?.toLowerCase().replace(/\.$/, '')
  return !!other && (other === author || author.endsWith(`.${other}`) || other.endsWith(`.${author}`))
}

/**
 * Checks the sender of a raw message with mailauth (SPF, DKIM, DMARC): authenticated when DMARC passes, or, for a
 * From domain that publishes no DMARC record, when an SPF or DKIM pass is aligned with it as DMARC would require.
 * Anything else (a forged From, no From domain, several) is not.
 */
export async function checkSender(
  raw: Uint8Array,
  origin: SmtpOrigin,
  options: { mta: string; resolver?: DnsResolver | undefined },
): Promise<SenderCheck> {
  const result = await authenticate(Buffer.from(raw), {
    ip: origin.ip,
    helo: origin.helo,
    sender: origin.envelopeFrom ?? '',
    mta: options.mta,
    disableArc: true,
    disableBimi: true,
    ...(options.resolver ? { resolver: options.resolver as never } : {}),
  })
  const { dkim, spf, dmarc } = result
  const dkimResults = dkim.results.map((signature) => signature.status.result)
  const summary = `dmarc=${dmarc ? dmarc.status.result : 'none'} spf=${spf ? spf.status.result : 'none'} dkim=${dkimResults.join(',') || 'none'}`
  if (!dmarc) return { authenticated: false, temporary: false, summary }
  const verdict = dmarc.status.result
  if (verdict === 'pass') return { authenticated: true, temporary: false, summary }
  if (verdict !== 'none') return { authenticated: false, temporary: verdict === 'temperror', summary }
  const [author] = dkim.headerFrom.map(domainOf)
  const byDkim = dkim.results.some(
    (signature) => signature.status.result === 'pass' && aligned(author ?? '', signature.signingDomain),
  )
  const bySpf = !!spf && spf.status.result === 'pass' && aligned(author ?? '', spf.domain)
  const temporary = !!spf && spf.status.result === 'temperror'
  return { authenticated: !!author && (byDkim || bySpf), temporary, summary }
}
