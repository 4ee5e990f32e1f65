// The `format`s a skill input may assert, each checked by one pass over the text: no regular expression with
// nested or adjacent repetition (the validator's own `url` expression backtracks: 394 bytes took 18.5 s). The
// only regular expressions here test one character.

const DIGIT = /^[0-9]$/
const HEX = /^[0-9a-fA-F]$/
const ALNUM = /^[a-zA-Z0-9]$/
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** True when `text` has only digits from `from` for `count` characters. */
function digitsAt(text: string, from: number, count: number): boolean {
  if (from + count > text.length) return false
  for (let index = from; index < from + count; index++) if (!DIGIT.test(text[index] as string)) return false
  return true
}

/** True when `text` has `character` at each index of `at`. */
const charsAt = (text: string, at: number[], character: string) =>
  at.every((index) => text[index] === character)

/** RFC 3339 full-date: YYYY-MM-DD, a day that exists in that month. */
function date(text: string): boolean {
  if (text.length !== 10 || !charsAt(text, [4, 7], '-')) return false
  if (!digitsAt(text, 0, 4) || !digitsAt(text, 5, 2) || !digitsAt(text, 8, 2)) return false
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8))]
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = month === 2 && leap ? 29 : DAYS[month - 1]
  return days !== undefined && day >= 1 && day <= days
}

/** RFC 3339 full-time: HH:MM:SS, optional fraction, then Z or ±HH:MM; second 60 only at 23:59 UTC. */
function time(text: string): boolean {
  if (!digitsAt(text, 0, 2) || !digitsAt(text, 3, 2) || !digitsAt(text, 6, 2)) return false
  if (!charsAt(text, [2, 5], ':')) return false
  let index = 8
  if (text[index] === '.') {
    const start = ++index
    while (DIGIT.test(text[index] ?? '')) index++
    if (index === start) return false
  }
  const [hour, minute, second] = [
    Number(text.slice(0, 2)),
    Number(text.slice(3, 5)),
    Number(text.slice(6, 8)),
  ]
  let offset = 0
  const zone = text.slice(index)
  if (zone !== 'Z' && zone !== 'z') {
    if (zone.length !== 6 || (zone[0] !== '+' && zone[0] !== '-') || zone[3] !== ':') return false
    if (!digitsAt(zone, 1, 2) || !digitsAt(zone, 4, 2)) return false
    const [offsetHour, offsetMinute] = [Number(zone.slice(1, 3)), Number(zone.slice(4))]
    if (offsetHour > 23 || offsetMinute > 59) return false
    offset = (zone[0] === '+' ? 1 : -1) * (offsetHour * 60 + offsetMinute)
  }
  if (hour > 23 || minute > 59 || second > 60) return false
  return second < 60 || (hour * 60 + minute - offset + 24 * 60) % (24 * 60) === 23 * 60 + 59
}

/** RFC 3339 date-time: a date, T (or a space), a time. */
const dateTime = (text: string) =>
  (text[10] === 'T' || text[10] === 't' || text[10] === ' ') &&
  date(text.slice(0, 10)) &&
  time(text.slice(11))

/** RFC 3339 duration: P, then weeks alone, or consecutive Y M D units and/or T with consecutive H M S units. */
function duration(text: string): boolean {
  if (text[0] !== 'P') return false
  const units = { date: '', time: '' }
  let part: 'date' | 'time' = 'date'
  for (let index = 1; index < text.length; ) {
    if (text[index] === 'T' && part === 'date') {
      part = 'time'
      index++
      continue
    }
    const start = index
    while (DIGIT.test(text[index] ?? '')) index++
    if (index === start || index >= text.length) return false
    units[part] += text[index++]
  }
  if (units.date === 'W') return part === 'date'
  const consecutive = (found: string, order: string) => found === '' || order.includes(found)
  if (part === 'time' && units.time === '') return false
  return (
    (units.date !== '' || units.time !== '') &&
    consecutive(units.date, 'YMD') &&
    consecutive(units.time, 'HMS')
  )
}

/** A host name: labels of 1-63 letters, digits and inner hyphens, at most 253 characters in all. */
function hostname(text: string): boolean {
  if (text.length < 1 || text.length > 253) return false
  return text.split('.').every((label) => {
    if (label.length < 1 || label.length > 63 || label.startsWith('-') || label.endsWith('-')) return false
    for (const character of label) if (character !== '-' && !ALNUM.test(character)) return false
    return true
  })
}

/** Dotted-quad IPv4: four numbers 0-255 of 1-3 digits. */
function ipv4(text: string): boolean {
  const parts = text.split('.')
  return (
    parts.length === 4 &&
    parts.every(
      (part) => part.length >= 1 && part.length <= 3 && digitsAt(part, 0, part.length) && Number(part) <= 255,
    )
  )
}

/** IPv6 (RFC 4291 text form): eight groups of 1-4 hex digits, one `::` for a run of zeros, an IPv4 tail allowed. */
function ipv6(text: string): boolean {
  if (text.length > 45) return false
  const halves = text.split('::')
  if (halves.length > 2) return false
  const groups = halves.map((half) => (half === '' ? [] : half.split(':')))
  const all = groups.flat()
  const last = all.at(-1)
  const tail = last?.includes('.') ? (ipv4(last) ? 2 : -100) : 0
  const hex = tail ? all.slice(0, -1) : all
  if (
    tail < 0 ||
    !hex.every((group) => group.length >= 1 && group.length <= 4 && [...group].every((c) => HEX.test(c)))
  )
    return false
  if (tail && halves.length === 2 && groups[1]?.length === 0) return false
  const count = hex.length + tail
  return halves.length === 2 ? count <= 7 : count === 8
}

/** An e-mail address: a dot-atom or quoted local part of at most 64, @, a host name or a [bracketed] address. */
function email(text: string): boolean {
  let at: number
  if (text.startsWith('"')) {
    let index = 1
    for (; index < text.length && text[index] !== '"'; index++) if (text[index] === '\\') index++
    at = index + 1
  } else {
    at = text.indexOf('@')
    const local = text.slice(0, at)
    if (at < 1 || local.startsWith('.') || local.endsWith('.') || local.includes('..')) return false
    for (const character of local)
      if (!ALNUM.test(character) && !".!#$%&'*+/=?^_`{|}~-".includes(character)) return false
  }
  if (text[at] !== '@' || at > 64) return false
  const host = text.slice(at + 1)
  if (host.startsWith('[') && host.endsWith(']')) {
    const address = host.slice(1, -1)
    return address.toLowerCase().startsWith('ipv6:') ? ipv6(address.slice(5)) : ipv4(address)
  }
  return hostname(host)
}

/** 8-4-4-4-12 hex digits. */
function uuid(text: string): boolean {
  if (text.length !== 36 || !charsAt(text, [8, 13, 18, 23], '-')) return false
  for (let index = 0; index < 36; index++)
    if (text[index] !== '-' && !HEX.test(text[index] as string)) return false
  return true
}

const URI_CHARACTERS = "-._~:/?#[]@!$&'()*+,;="

/** Only characters RFC 3986 allows in a URI, each % followed by two hex digits. */
function uriCharacters(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const character = text[index] as string
    if (character === '%') {
      if (!HEX.test(text[index + 1] ?? '') || !HEX.test(text[index + 2] ?? '')) return false
      index += 2
    } else if (!ALNUM.test(character) && !URI_CHARACTERS.includes(character)) return false
  }
  return true
}

/** A scheme (a letter, then letters, digits, + - .) up to the first colon. */
function hasScheme(text: string): boolean {
  const colon = text.indexOf(':')
  if (colon < 1 || !/^[a-zA-Z]$/.test(text[0] as string)) return false
  for (let index = 1; index < colon; index++)
    if (!ALNUM.test(text[index] as string) && !'+-.'.includes(text[index] as string)) return false
  return true
}

/** An absolute URI (RFC 3986): a scheme, RFC 3986 characters only, and a form the WHATWG URL parser takes. */
const uri = (text: string) => hasScheme(text) && uriCharacters(text) && URL.canParse(text)

/** A URI or a relative reference: RFC 3986 characters only, at most one #. */
const uriReference = (text: string) => uriCharacters(text) && text.indexOf('#') === text.lastIndexOf('#')

/** The private, loopback and link-local IPv4 ranges a public `url` may not name, as first octets (and the next). */
function privateIpv4(host: string): boolean {
  const [a, b, , d] = host.split('.').map(Number) as [number, number, number, number]
  return (
    a === 10 ||
    a === 127 ||
    a === 0 ||
    a >= 224 ||
    d === 0 ||
    d === 255 ||
    (a === 169 && b === 254) ||
    (a === 192 && b === 168) ||
    (a === 172 && b >= 16 && b <= 31)
  )
}

/** A public http, https or ftp URL: no spaces, a host name with a top-level domain or a public IPv4 address. */
function url(text: string): boolean {
  if (!/^(https?|ftp):\/\//i.test(text.slice(0, 8)) || !URL.canParse(text)) return false
  for (const character of text) if (character.trim() === '') return false
  const host = new URL(text).hostname
  if (ipv4(host)) return !privateIpv4(host)
  const labels = host.split('.')
  const top = labels.at(-1) ?? ''
  return labels.length >= 2 && labels.every(Boolean) && (top.startsWith('xn--') || /^[a-z]{2,}$/.test(top))
}

/** A JSON Pointer (RFC 6901): empty, or / then tokens where ~ is always ~0 or ~1. */
function jsonPointer(text: string): boolean {
  if (text !== '' && !text.startsWith('/')) return false
  for (let index = 0; index < text.length; index++)
    if (text[index] === '~' && text[index + 1] !== '0' && text[index + 1] !== '1') return false
  return true
}

/** The formats a skill input may assert, each checked in one pass over the value (time linear in its length). */
export const FORMAT_CHECKERS: Readonly<Record<string, (text: string) => boolean>> = {
  date,
  time,
  'date-time': dateTime,
  duration,
  email,
  hostname,
  ipv4,
  ipv6,
  uri,
  'uri-reference': uriReference,
  url,
  uuid,
  'json-pointer': jsonPointer,
}

/**
 * Formats the validator would check with expressions or code we do not run (refused in a skill input); any other
 * `format` name is an annotation, as JSON Schema 2020-12 has it, and checks nothing.
 */
export const UNCHECKED_FORMATS: readonly string[] = [
  'uri-template',
  'regex',
  'json-pointer-uri-fragment',
  'relative-json-pointer',
]
