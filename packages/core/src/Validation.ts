import leven from 'leven'
import * as v from 'valibot'
import { getAddress, isAddress } from 'viem'
import { type FieldProblem, InvalidInputError } from './errors.ts'

/** Escapes one key for a JSON Pointer (RFC 6901). */
function escapePointerToken(key: unknown): string {
  return String(key).replaceAll('~', '~0').replaceAll('/', '~1')
}

/** Turns valibot issues into JSON Pointer field problems, one per issue, deepest first, in plain words. */
export function issuesToFieldProblems(issues: readonly v.BaseIssue<unknown>[]): FieldProblem[] {
  return issues.map((issue) => {
    const keys = (issue.path ?? []).map((item) => escapePointerToken(item.key))
    return { pointer: keys.length ? `/${keys.join('/')}` : '', detail: plainWords(issue) }
  })
}

/**
 * The issue's message, or plain words for valibot's own ("Invalid type: Expected string but received 5"), which
 * read like library internals; every schema of ours names its rule, this covers the few that fall through.
 */
function plainWords(issue: v.BaseIssue<unknown>): string {
  if (!issue.message.startsWith('Invalid ')) return issue.message
  if (issue.received === 'undefined') return 'is required'
  const expected = issue.expected?.replaceAll('|', 'or') ?? 'another value'
  return `must be ${expected} (got ${issue.received})`
}

/** The known name closest to `name` (case or a couple of letters apart), or null when none is close. */
export function closestName(name: string, known: readonly string[]): string | null {
  let best: string | null = null
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1
  for (const candidate of known) {
    const distance = leven(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance]
  }
  return best
}

/** What is wrong with one key of a strict object: unknown (with the closest known field), or missing. */
function fieldMessage(
  issue: v.BaseIssue<unknown>,
  known: readonly string[],
  notAnObject: string,
  requiredHints: Readonly<Record<string, string | undefined>>,
): string {
  const key = issue.path?.at(-1)?.key
  if (issue.expected === 'never' && typeof key === 'string') {
    const near = closestName(key, known)
    const hint = near ? `did you mean "${near}"? ` : ''
    return `is not a field here; ${hint}send only ${known.map((name) => `"${name}"`).join(', ')}`
  }
  if (issue.received === 'undefined' && key !== undefined) {
    const hint = typeof key === 'string' ? requiredHints[key] : undefined
    return hint ? `is required: ${hint}` : 'is required'
  }
  return notAnObject
}

/**
 * A JSON object with exactly these fields: an unknown or misplaced one (a typo, a field of another request) is a
 * 400 naming it and the closest known field, never silently ignored. `requiredHints` says what to send for a
 * required field left out.
 */
export function strictFields<TEntries extends v.ObjectEntries>(
  entries: TEntries,
  notAnObject = 'must be a JSON object',
  requiredHints: { readonly [Key in keyof TEntries & string]?: string } = {},
) {
  const known = Object.keys(entries)
  const hints: Readonly<Record<string, string | undefined>> = requiredHints
  return v.strictObject(entries, (issue) => fieldMessage(issue, known, notAnObject, hints))
}

/**
 * Validates `value` against `schema` and returns the typed output, or throws a 400 InvalidInputError
 * whose `errors` point at each bad field.
 * @example const input = parseInput(RegisterAgentInput, body, 'invalid_body')
 */
export function parseInput<TSchema extends v.GenericSchema>(
  schema: TSchema,
  value: unknown,
  code: 'invalid_body' | 'invalid_query' = 'invalid_body',
): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, value)
  if (result.success) return result.output
  const errors = issuesToFieldProblems(result.issues)
  const where = code === 'invalid_query' ? 'query' : 'body'
  const first = errors[0]
  const summary = first ? `${first.pointer || `the ${where}`} ${first.detail}` : `the ${where} is malformed`
  throw new InvalidInputError(code, `The request ${where} is invalid: ${summary}.`, errors)
}

/**
 * The first control character of `text` other than tab, line feed and carriage return (a CRLF newline), or null.
 * C0 controls and DEL are invisible, and NUL truncates text in many stores and terminals.
 */
function firstControlCharacter(text: string): number | null {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f) return code
  }
  return null
}

// A character that shows: not white space, not a default-ignorable one (zero-width spaces, the Hangul fillers, soft
// hyphens, BOM) and not the blank Braille pattern, each of which renders as nothing.
const VISIBLE = /[^\s\p{Default_Ignorable_Code_Point}\u2800]/u

/** Refuses text that shows nothing (only invisible characters; empty text is minLength's to refuse), saying what to send. */
export function visibleText(what: string) {
  return v.check(
    (text: string) => text.length === 0 || VISIBLE.test(text),
    `must show some text, not only invisible characters: send ${what}`,
  )
}

/** Refuses text holding a control character other than tab and newline, naming the first one. */
export function noControlCharacters() {
  return v.check(
    (text: string) => firstControlCharacter(text) === null,
    (issue: v.CheckIssue<string>) => {
      const code = (firstControlCharacter(String(issue.input)) ?? 0)
        .toString(16)
        .toUpperCase()
        .padStart(4, '0')
      return `must not contain control characters (found U+${code}); only tab and newline are allowed`
    },
  )
}

/** A trimmed string of bounded length, without control characters, with readable messages. */
export function boundedText(max: number, min = 0) {
  return v.pipe(
    v.string('must be a string'),
    noControlCharacters(),
    v.trim(),
    v.minLength(min, min === 1 ? 'must not be empty' : `must have at least ${min} characters`),
    v.maxLength(max, `must be at most ${max} characters`),
  )
}

/** An absolute http(s) URL of bounded length. */
export const HttpUrl = v.pipe(
  v.string('must be a string'),
  noControlCharacters(),
  v.trim(),
  v.maxLength(2048, 'must be at most 2048 characters'),
  v.check((text) => {
    if (!URL.canParse(text)) return false
    const protocol = new URL(text).protocol
    return protocol === 'https:' || protocol === 'http:'
  }, 'must be an absolute http:// or https:// URL'),
)

/**
 * One walk of a JSON value: whether it nests objects or arrays more than `maxDepth` levels deep (`value` itself is
 * level 1; the walk stops there), and whether it holds a number JSON cannot keep (1e999 parses to Infinity, which
 * JSON.stringify writes as null).
 */
function walkJson(value: unknown, maxDepth: number): { tooDeep: boolean; nonFinite: boolean } {
  let nonFinite = false
  // A loop, not recursion: a 64 KiB body can nest tens of thousands of levels.
  const pending: { item: unknown; depth: number }[] = [{ item: value, depth: 1 }]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { item, depth } = next
    if (typeof item === 'number' && !Number.isFinite(item)) nonFinite = true
    if (typeof item !== 'object' || item === null) continue
    if (depth > maxDepth) return { tooDeep: true, nonFinite }
    for (const child of Object.values(item)) pending.push({ item: child, depth: depth + 1 })
  }
  return { tooDeep: false, nonFinite }
}

/** True when `value` nests objects or arrays more than `maxDepth` levels deep (read in a loop, stopping there). */
export const nestsDeeperThan = (value: unknown, maxDepth: number) => walkJson(value, maxDepth).tooDeep

/**
 * A JSON object (not an array, not null) whose UTF-8 JSON text is at most `maxBytes` and which nests at most
 * `maxDepth` levels (the object itself is level 1): deep nesting breaks the JSON parsers of many clients.
 */
export function boundedJsonObject(maxBytes: number, maxDepth: number) {
  return v.pipe(
    // v.record would accept arrays.
    v.custom<Record<string, unknown>>(
      (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
      'must be a JSON object',
    ),
    v.rawCheck(({ dataset, addIssue }) => {
      if (!dataset.typed) return
      const { tooDeep, nonFinite } = walkJson(dataset.value, maxDepth)
      if (tooDeep)
        return addIssue({ message: `must nest objects and arrays at most ${maxDepth} levels deep` })
      if (nonFinite)
        addIssue({
          message:
            'must hold only numbers JSON can keep: one past ±1.8e308 (such as 1e999) would be stored as null; send it as a string',
        })
      // Only within the depth: JSON.stringify takes about half a second on 30,000 nested arrays.
      if (new TextEncoder().encode(JSON.stringify(dataset.value)).length > maxBytes)
        addIssue({ message: `must be at most ${maxBytes} bytes of JSON` })
    }),
  )
}

/** A whole number within bounds, given as a JSON number or as query-string digits. */
export function pageNumber(min: number, max: number) {
  return v.pipe(
    v.union(
      [v.number(), v.pipe(v.string(), v.regex(/^\d{1,9}$/, 'must be a whole number'), v.transform(Number))],
      'must be a whole number',
    ),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  )
}

/** A 20-byte hex address (a mixed-case one must carry a valid EIP-55 checksum), answered checksummed. */
export const WalletAddressInput = v.pipe(
  v.string('must be a string'),
  v.check(
    (text) => isAddress(text),
    'must be a 20-byte hex address (0x + 40 hex digits, valid EIP-55 checksum if mixed case)',
  ),
  v.transform((text) => getAddress(text)),
)
