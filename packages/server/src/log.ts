import { fstatSync, writeSync } from 'node:fs'
import { loggedPath } from './requestPath.ts'

/** How much the server logs: `info` a line per request, `warn` only failures, `off` nothing. */
export type LogLevel = 'info' | 'warn' | 'off'

/** An answered request as its log line tells it: the line is made from these when the lines are written. */
export type RequestParts = {
  /** When it was answered (ms since the epoch). */
  at: number
  requestId: string
  method: string
  /** The request URL; the line keeps its path without the query, task ids redacted (`loggedPath`). */
  url: string
  status: number
  /** Milliseconds from its arrival to its answer. */
  ms: number
}

/** Fields of one log line; never a key, pairing code, signature, e-mail or task params (SECURITY.md). */
export type LogFields = Record<string, string | number | boolean | null | undefined>

/** A JSON-lines logger: one object per line on standard output, `time`, `level` and `msg` first. */
export type Logger = {
  level: LogLevel
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields, error?: unknown): void
  /** The line of an answered request (`request`, or a `request failed` warning for 5xx), kept as its parts until written. */
  request(parts: RequestParts): void
  /** Writes the lines still waiting to be written with others; `atExit`: before returning (the process is ending). */
  flush(atExit?: boolean): void
}

// Messages of database and parser errors quote the values they choke on (search words, body text): quoted parts are
// replaced, and the rest is cut short.
const QUOTED = /"[^"]*"|'[^']*'|`[^`]*`/g
const LONGEST_MESSAGE = 300
// Client errors (viem's among them) print the URL they failed on: an RPC URL may carry its API key in the user
// name, the path (`/v2/<key>`) or the query, so only the scheme, host and port of a URL are logged.
const URL_IN_TEXT = /(?:https?|wss?):\/\/[^\s"'<>]+/g

/** `text` with every URL cut to its origin (`https://host:port/…`): what may carry a key is never logged. */
export function withoutUrlSecrets(text: string): string {
  return text.replace(URL_IN_TEXT, (found) => {
    if (!URL.canParse(found)) return '<url>'
    const url = new URL(found)
    const rest = found.length > url.origin.length + 1 || url.username || url.password ? '/…' : ''
    return `${url.protocol}//${url.host}${rest}`
  })
}

/** What may be logged of a thrown value: its kind, its message without quoted values, and its stack. */
function describeError(error: unknown): LogFields {
  const message = (text: string) => withoutUrlSecrets(text).replace(QUOTED, '"…"').slice(0, LONGEST_MESSAGE)
  if (!(error instanceof Error)) return { error: message(String(error)) }
  return {
    error: `${error.name}: ${message(error.message)}`,
    ...(error.cause instanceof Error
      ? { cause: `${error.cause.name}: ${message(error.cause.message)}` }
      : {}),
    // Frames only: the stack's first lines repeat the message, quoted values included.
    stack: error.stack
      ?.split('\n')
      .filter((line) => /^\s+at /.test(line))
      .slice(0, 5)
      .join('\n'),
  }
}

/**
 * Whether `fd` is a file or a character device (a terminal, /dev/null): a write there never waits on a reader, and
 * Node writes its standard output there synchronously too.
 */
export function writesAtOnce(fd: number): boolean {
  try {
    const stat = fstatSync(fd)
    return stat.isFile() || stat.isCharacterDevice()
  } catch {
    return false
  }
}

/** Writes all of `text` to standard output now; what a failed write left goes through process.stdout's queue. */
function writeNow(text: string): void {
  let written = 0
  let bytes: Buffer | undefined
  try {
    written = writeSync(1, text)
    const size = Buffer.byteLength(text)
    if (written >= size) return
    // A write may take less than the whole text: the rest, by its bytes.
    bytes = Buffer.from(text)
    while (written < size) written += writeSync(1, bytes, written)
  } catch {
    process.stdout.write(bytes ? bytes.subarray(written) : text)
  }
}

/**
 * Standard output. A file or /dev/null is written at once: through process.stdout's queue a flush of 512 lines
 * cost about a third more, some 0.7 µs a request (bench/CHANGES.md). A pipe or socket is written in the background while the server runs, as its reader may
 * be slow, and at once at exit, when a background write would be cut off with the process.
 */
function stdoutWriter(): (text: string, atExit: boolean) => void {
  const atOnce = writesAtOnce(1)
  return (text, atExit) => {
    if (atExit || atOnce) writeNow(text)
    else process.stdout.write(text)
  }
}

/** How long a line may wait to be written with others, and how many may wait. */
const FLUSH_MS = 100
const FLUSH_LINES = 512

/** A time (ms since the epoch) as ISO 8601, formatted once per millisecond however many lines share it. */
function isoClock(): (at: number) => string {
  let lastMs = 0
  let lastText = ''
  return (at) => {
    if (at !== lastMs) {
      lastMs = at
      lastText = new Date(at).toISOString()
    }
    return lastText
  }
}

// Printable ASCII without a quote or backslash: JSON writes such a string as it is, between quotes.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/

/** `text` as a JSON string; request ids, methods and most paths need no escaping, and skip JSON.stringify. */
function jsonString(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text)
}

/** A field's value as JSON: a non-finite number as null, as JSON.stringify writes it. */
function jsonValue(value: string | number | boolean | null): string {
  if (typeof value === 'string') return jsonString(value)
  return typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value)
}

/**
 * One JSON object: time, level and msg first, then the fields, an undefined one left out (as JSON.stringify does).
 * Written field by field: a request line costs a fraction of stringifying a spread object.
 */
function jsonLine(time: string, level: string, msg: string, fields: LogFields): string {
  let text = `{"time":"${time}","level":"${level}","msg":${jsonString(msg)}`
  for (const name in fields) {
    const value = fields[name]
    if (value !== undefined) text += `${fieldKey(name)}${jsonValue(value)}`
  }
  return `${text}}`
}

const fieldKeys = new Map<string, string>()

/** `,"name":` for a field name, made once per name. */
function fieldKey(name: string): string {
  let key = fieldKeys.get(name)
  if (key === undefined) {
    key = `,${JSON.stringify(name)}:`
    if (fieldKeys.size < 1000) fieldKeys.set(name, key)
  }
  return key
}

/**
 * A request's milliseconds as JSON: hundredths written from integers, the text JSON.stringify gives them (`0.5`, `12`,
 * `3.07`) without converting a fraction to decimal; any other value as `jsonValue` writes it.
 */
function msJson(ms: number): string {
  const hundredths = Math.round(ms * 100)
  if (hundredths / 100 !== ms || hundredths < 0 || hundredths > 0x7fffffff) return jsonValue(ms)
  const whole = (hundredths / 100) | 0
  const part = hundredths - whole * 100
  if (part === 0) return `${whole}`
  if (part % 10 === 0) return `${whole}.${part / 10}`
  return `${whole}.${part < 10 ? '0' : ''}${part}`
}

/** How many request URLs keep their logged path's JSON; past it they are all let go (a few hot paths come back). */
const KNOWN_URLS = 512

/**
 * `loggedPath(url)` as JSON, made once per URL while it is among the last KNOWN_URLS: most lines of a busy server name
 * a few paths (a hot card, a polled task), each made in a regular expression's scan, a cut and a test before.
 */
function pathJsonOf(known: Map<string, string>, url: string): string {
  let json = known.get(url)
  if (json === undefined) {
    json = jsonString(loggedPath(url))
    if (known.size >= KNOWN_URLS) known.clear()
    known.set(url, json)
  }
  return json
}

/** A failure (5xx) is a warning, so LOG_LEVEL=warn keeps it alone. */
const isFailure = (parts: RequestParts) => parts.status >= 500

/**
 * The line of an answered request, the same JSON as `jsonLine` gives its fields (requestId, method, path, status,
 * ms), written without the field loop: it is the line of every request, made thousands of times a second.
 */
function requestLine(time: string, parts: RequestParts, known: Map<string, string>): string {
  const head = isFailure(parts) ? '"level":"warn","msg":"request failed"' : '"level":"info","msg":"request"'
  return `{"time":"${time}",${head},"requestId":${jsonString(parts.requestId)},"method":${jsonString(parts.method)},"path":${pathJsonOf(known, parts.url)},"status":${jsonValue(parts.status)},"ms":${msJson(parts.ms)}}\n`
}

/**
 * A logger writing JSON lines. Lines are gathered for up to 100 ms and written together, so a busy server does not
 * pay a system call per request; `flush` writes them at once (the server calls it when it stops). Request lines wait
 * as their parts and are formatted then, together: formatting each while its request was answered cost the hot reads
 * about a tenth of their throughput (bench/CHANGES.md).
 * @example const log = jsonLogger('info'); log.info('listening', { port: 3000 })
 */
export function jsonLogger(level: LogLevel, write: (text: string, atExit: boolean) => void = stdoutWriter()) {
  let pending: (string | RequestParts)[] = []
  let timer: ReturnType<typeof setTimeout> | null = null
  const time = isoClock()
  const known = new Map<string, string>()
  const format = (entry: string | RequestParts) =>
    typeof entry === 'string' ? entry : requestLine(time(entry.at), entry, known)
  const flush = (atExit = false) => {
    if (timer) clearTimeout(timer)
    timer = null
    if (pending.length === 0) return
    const entries = pending
    pending = []
    let text = ''
    for (const entry of entries) text += format(entry)
    write(text, atExit)
  }
  const queue = (entry: string | RequestParts) => {
    pending.push(entry)
    if (pending.length >= FLUSH_LINES) flush()
    else if (!timer) timer = setTimeout(() => flush(), FLUSH_MS)
  }
  const line = (severity: string, msg: string, fields: LogFields = {}) =>
    queue(`${jsonLine(time(Date.now()), severity, msg, fields)}\n`)
  const logger: Logger = {
    level,
    info: (msg, fields) => level === 'info' && line('info', msg, fields),
    warn: (msg, fields) => level !== 'off' && line('warn', msg, fields),
    error: (msg, fields = {}, error = undefined) =>
      level !== 'off' &&
      line('error', msg, { ...fields, ...(error === undefined ? {} : describeError(error)) }),
    request: (parts) => (level === 'info' || (level === 'warn' && isFailure(parts))) && queue(parts),
    flush,
  }
  return logger
}

/** Failures of code started without a logger of its own (tests, embedding) go here. */
export const fallbackLogger: Logger = jsonLogger('warn')
