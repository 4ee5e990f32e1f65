import { ORDER_MAIL_HEADER_LIMITS } from '@agentmarket/core'

/** A header past one of ORDER_MAIL_HEADER_LIMITS: the SMTP reply that refuses it (552, enhanced code and reason). */
export type HeaderRefusal = { enhanced: string; reason: string }

/** What every refusal tells the sender to send instead. */
export const HEADER_LIMITS_TEXT = `an order's header holds at most ${ORDER_MAIL_HEADER_LIMITS.headerBytes} bytes, ${ORDER_MAIL_HEADER_LIMITS.fields} fields and ${ORDER_MAIL_HEADER_LIMITS.addresses} addresses, its MIME parts nest at most ${ORDER_MAIL_HEADER_LIMITS.mimeDepth} deep`

/** The SMTP reply text of `refusal`. */
export const refusalText = (refusal: HeaderRefusal) =>
  `${refusal.enhanced} The message's header is too large for an order (${refusal.reason}): ${HEADER_LIMITS_TEXT}`

/** A MIME part past the nesting depth or the headers' size in all, found while decoding. */
export class MimeLimitError extends Error {
  constructor(readonly refusal: HeaderRefusal) {
    super(refusal.reason)
  }
}

const CR = 13
const LF = 10
const SPACE = 32
const TAB = 9
const COLON = 58
const COMMA = 44
const QUOTE = 34
const BACKSLASH = 92

/** Fields whose value is a list of addresses (RFC 5322 3.6.2, 3.6.3, 3.6.6), lower case. */
const ADDRESS_FIELDS = new Set(
  ['from', 'sender', 'reply-to', 'to', 'cc', 'bcc'].flatMap((name) => [name, `resent-${name}`]),
)

/** The scan's state: where it is in the header block and what it has counted. */
type Scan = { fields: number; addresses: number; inAddresses: boolean; quoted: boolean; escaped: boolean }

/** The lower-case field name of the line starting at `start` (ASCII; up to the colon), or '' without one. */
function fieldName(raw: Uint8Array, start: number, end: number): string {
  let name = ''
  for (let at = start; at < end && at - start < 40; at++) {
    const byte = raw[at] ?? 0
    if (byte === COLON) return name
    name += String.fromCharCode(byte >= 65 && byte <= 90 ? byte + 32 : byte)
  }
  return ''
}

/** Counts the items of an address list in `raw[start, end)`: commas outside quoted strings, carried across folds. */
function countAddresses(raw: Uint8Array, start: number, end: number, scan: Scan) {
  for (let at = start; at < end; at++) {
    const byte = raw[at]
    if (scan.escaped) scan.escaped = false
    else if (scan.quoted && byte === BACKSLASH) scan.escaped = true
    else if (byte === QUOTE) scan.quoted = !scan.quoted
    else if (byte === COMMA && !scan.quoted) scan.addresses++
  }
}

/** Reads the header line `raw[start, end)` (without its line break) into `scan`. */
function readLine(raw: Uint8Array, start: number, end: number, scan: Scan) {
  const first = raw[start]
  if (first === SPACE || first === TAB) {
    if (scan.inAddresses) countAddresses(raw, start, end, scan)
    return
  }
  scan.fields++
  const name = fieldName(raw, start, end)
  scan.inAddresses = ADDRESS_FIELDS.has(name)
  scan.quoted = false
  scan.escaped = false
  if (!scan.inAddresses) return
  scan.addresses++
  countAddresses(raw, start + name.length + 1, end, scan)
}

/**
 * Whether the top-level header block of a raw message keeps within ORDER_MAIL_HEADER_LIMITS, read in one pass over
 * at most its first `headerBytes` bytes: null when it does, else the refusal. Addresses are counted as the items of
 * each address field (commas outside quoted strings, plus one), an upper bound of what a parser would find.
 */
export function headerLimitRefusal(raw: Uint8Array): HeaderRefusal | null {
  const limits = ORDER_MAIL_HEADER_LIMITS
  const scan: Scan = { fields: 0, addresses: 0, inAddresses: false, quoted: false, escaped: false }
  const stop = Math.min(raw.length, limits.headerBytes)
  let start = 0
  while (start < stop) {
    const end = raw.indexOf(LF, start)
    if (end < 0 || end >= stop) break
    const lineEnd = end > start && raw[end - 1] === CR ? end - 1 : end
    if (lineEnd === start) return null
    readLine(raw, start, lineEnd, scan)
    if (scan.fields > limits.fields)
      return { enhanced: '5.3.4', reason: `more than ${limits.fields} header fields` }
    if (scan.addresses > limits.addresses)
      return { enhanced: '5.5.3', reason: `more than ${limits.addresses} addresses in its address fields` }
    start = end + 1
  }
  if (raw.length <= limits.headerBytes) return null
  return { enhanced: '5.3.4', reason: `a header block over ${limits.headerBytes} bytes` }
}
