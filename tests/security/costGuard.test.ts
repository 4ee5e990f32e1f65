import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MARKET_ROUTES } from '@agentmarket/core'
import type { RouteRow } from '@agentmarket/core/routes'
import { Glob } from 'bun'
import fc from 'fast-check'
import { createTransport } from 'nodemailer'
import { check } from 'recheck'
import ts from 'typescript'
import { withoutReceivedValue } from '../../packages/core/src/actions/mail/receiveOrderMail.ts'
import { webhookUrlProblem } from '../../packages/core/src/Webhook.ts'
import { type OrderListener, startOrderListener } from '../../packages/server/src/mail/listener.ts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { freePort } from '../support/process.ts'

// The cost guard on everything a client controls that the server evaluates (issue 37, mechanism 2; seller schemas
// and params have their own: schemaCostGuard.test.ts). Work is measured as this process's CPU time
// (process.cpuUsage: user + system), never the wall clock, and judged two ways with wide margins: each input stays
// within a stated budget (SECURITY.md "Client input: the cost budget"), and doubling an input's size at most about
// doubles its cost (the median of several runs at n and 2n: a ratio under 4 passes; a quadratic cost gives 4 and
// more; pure functions are measured at n and 4n, where quadratic work gives 16 and the bar is 8). The surfaces are derived from where they are defined: every string field of every route row's body and
// query (MARKET_ROUTES), every regular expression literal in the packages' source (parsed with TypeScript).

/** CPU budget of one HTTP request, whatever a client sends (ms of this process's CPU). */
const REQUEST_BUDGET_MS = 250
/**
 * CPU budget of one order e-mail of 200 KB through the SMTP listener, the SMTP client's side, decoding and sender checks
 * included (measured: 0.04-2.1 s, the costliest a To header of 10,000 addresses parsed by mailauth and postal-mime;
 * a wide margin, since the verdict must not depend on the machine: linear growth is the sharper guard).
 */
const MAIL_BUDGET_MS = 5000
/** Below this much CPU a request, a growth ratio measures the process's noise (GC, the store's commits), not the input. */
const HTTP_NOISE_MS = 0.5
/** This process's CPU time, in ms, that `run` costs. */
async function cpuMs(run: () => unknown): Promise<number> {
  const start = process.cpuUsage()
  await run()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

/** Median CPU ms of `run`, `reps` calls a sample. */
async function medianCost(run: () => unknown, { samples = 5, reps = 1 } = {}): Promise<number> {
  const costs: number[] = []
  for (let sample = 0; sample < samples; sample++)
    costs.push(
      await cpuMs(async () => {
        for (let rep = 0; rep < reps; rep++) await run()
      }),
    )
  return median(costs) / reps
}

/**
 * The median cost of `run(size)` and of `run(factor * size)`, interleaved after a warm-up, and whether it grew at most
 * linearly: by less than twice the factor (a quadratic cost grows by the factor squared), or stayed under `floorMs` a
 * call at the larger size (below it, a busy process's noise, not the input, sets the ratio). Each sample repeats the
 * call until it holds about 10 ms of CPU.
 */
async function growth(
  run: (size: number) => unknown,
  size: number,
  { samples = 5, factor = 2, floorMs = 0.05 } = {},
) {
  const costOf = (at: number, reps: number) =>
    cpuMs(async () => {
      for (let rep = 0; rep < reps; rep++) await run(at)
    })
  await run(size)
  const reps = Math.min(50, Math.ceil(10 / Math.max(await costOf(factor * size, 1), 0.05)))
  const small: number[] = []
  const large: number[] = []
  for (let sample = 0; sample < samples; sample++) {
    small.push((await costOf(size, reps)) / reps)
    large.push((await costOf(factor * size, reps)) / reps)
  }
  const [smallMs, largeMs] = [median(small), median(large)]
  const ratio = Math.max(largeMs, floorMs) / Math.max(smallMs, floorMs)
  return { smallMs, largeMs, ratio, linear: ratio < 2 * factor }
}

// --- Every regular expression in the source ---------------------------------------------------------------------

/** A regular expression literal in the packages' source. */
type FoundRegex = { where: string; source: string; flags: string }

/**
 * Expressions built at run time (`new RegExp`) and why each is linear: they are not literals the checker can read.
 * A new one elsewhere fails the audit until it is reviewed and listed here.
 */
const BUILT_REGEXPS: Record<string, string> = {
  'packages/core/src/User.ts': 'the pairing code: fixed character classes with fixed counts, anchored',
  'packages/core/src/routes/match.ts': "route paths: escaped literal segments and ([^/]+), separated by '/'",
  'packages/server/src/plugins/problems.ts':
    "route paths: escaped literal segments and ([^/]+), separated by '/'",
  'packages/server/src/env.ts': 'RATE_LIMITS entries: the operator writes them, not a client',
}

/** Every regular expression literal, and every file that builds one, in packages/*\/src (tests left out). */
async function sourceRegexps(): Promise<{ literals: FoundRegex[]; builders: Set<string> }> {
  const literals: FoundRegex[] = []
  const builders = new Set<string>()
  for await (const file of new Glob('packages/*/src/**/*.ts').scan('.')) {
    if (file.endsWith('.test.ts')) continue
    const source = ts.createSourceFile(file, await Bun.file(file).text(), ts.ScriptTarget.Latest, true)
    const visit = (node: ts.Node) => {
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = node.getText(source)
        const end = text.lastIndexOf('/')
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
        literals.push({ where: `${file}:${line}`, source: text.slice(1, end), flags: text.slice(end + 1) })
      }
      if (ts.isNewExpression(node) && node.expression.getText(source) === 'RegExp') builders.add(file)
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return { literals, builders }
}

describe('regular expressions (issue 37): none backtracks super-linearly', () => {
  test('recheck finds every regular expression literal in the source safe (linear), and every built one is reviewed', async () => {
    const { literals, builders } = await sourceRegexps()
    // The scan must reach the code: the route table, mail and validation hold dozens.
    expect(literals.length).toBeGreaterThan(100)
    const unsafe: string[] = []
    for (const found of literals) {
      const diagnostics = await check(found.source, found.flags)
      if (diagnostics.status !== 'safe')
        unsafe.push(
          `${found.where} /${found.source}/${found.flags}: ${diagnostics.status}${'complexity' in diagnostics ? ` (${diagnostics.complexity.summary})` : ''}`,
        )
    }
    expect(unsafe).toEqual([])
    expect([...builders].filter((file) => !(file in BUILT_REGEXPS))).toEqual([])
  }, 300_000)

  test("a webhook URL's host ending in a run of dots is trimmed in linear time", async () => {
    // The run is longer than a webhook URL may be (2,048), to show the trim itself is linear, not only capped.
    const url = (dots: number) => `http://a${'.'.repeat(dots)}b/`
    const measured = await growth((dots) => webhookUrlProblem(url(dots), false), 4_000, { factor: 4 })
    expect(measured).toMatchObject({ linear: true })
  }, 120_000)

  test("a refusal quoting a seller's enum with a long run of spaces is cut in linear time", async () => {
    const detail = (spaces: number) => `must be one of ["x${' '.repeat(spaces)}x"]`
    const measured = await growth((spaces) => withoutReceivedValue(detail(spaces)), 4_000, { factor: 4 })
    expect(measured).toMatchObject({ linear: true })
    expect(withoutReceivedValue('must be a string, received 42')).toBe('must be a string')
    expect(withoutReceivedValue('Invalid type: Expected string but  Received "x"')).toBe(
      'Invalid type: Expected string but',
    )
  }, 120_000)
})

// --- Every string a route row takes -----------------------------------------------------------------------------

/** A string field of a route's body or query, with the longest value its schema lets through. */
type StringField = { row: RouteRow; part: 'body' | 'query'; name: string; max: number }

/** Probe length of a string field whose schema sets no maximum (the body's own 64 KiB cap still holds). */
const UNBOUNDED_PROBE = 16 * 1024

type AnySchema = {
  type: string
  wrapped?: AnySchema
  options?: AnySchema[]
  pipe?: { type: string; requirement?: unknown }[]
}

/** The schema inside optional, nullable and nullish wrappers. */
function unwrapped(schema: AnySchema): AnySchema {
  let inner = schema
  while (inner.wrapped && ['optional', 'nullable', 'nullish', 'exact_optional'].includes(inner.type))
    inner = inner.wrapped
  return inner
}

/** The longest string `schema` takes, or null when it takes no string. */
function stringMax(schema: AnySchema): number | null {
  const inner = unwrapped(schema)
  const takesString =
    inner.type === 'string' ||
    (inner.type === 'union' && (inner.options ?? []).some((option) => option.type === 'string'))
  if (!takesString) return null
  const max = inner.pipe?.find((action) => action.type === 'max_length')?.requirement
  return typeof max === 'number' ? max : UNBOUNDED_PROBE
}

/** Every string field of every row's body and query, read from MARKET_ROUTES. */
const STRING_FIELDS: StringField[] = MARKET_ROUTES.flatMap((row) =>
  (['body', 'query'] as const).flatMap((part) =>
    Object.entries((row[part]?.entries ?? {}) as Record<string, AnySchema>).flatMap(([name, schema]) => {
      const max = stringMax(schema)
      return max === null ? [] : [{ row, part, name, max }]
    }),
  ),
)

/** Characters that have a meaning somewhere the server reads text: LIKE, FTS, JSON, URLs, mail, Unicode. */
const TRICKY = [
  'a',
  'A',
  '0',
  '-',
  '_',
  '%',
  '.',
  '/',
  ' ',
  '\t',
  '\n',
  '"',
  "'",
  '*',
  '\\',
  '@',
  ':',
  '<',
  '>',
  '{',
  '}',
  '(',
  ')',
  '^',
  'é',
  '\u0301',
  '\u00a0',
  '\u202e',
  '😀',
  'NEAR',
  'OR',
  ',',
  '=',
  '+',
  '~',
  '#',
]

/** Adversarial text of at most `max` characters: a mix of the tricky characters, or one short pattern repeated to `max`. */
const trickyText = (max: number) =>
  fc.oneof(
    fc
      .array(fc.constantFrom(...TRICKY), { maxLength: Math.min(max, 64) })
      .map((parts) => parts.join('').slice(0, max)),
    fc
      .array(fc.constantFrom(...TRICKY), { minLength: 1, maxLength: 3 })
      .map((parts) => parts.join('').repeat(max).slice(0, max)),
  )

/** One pattern repeated to `length`: the inputs that make a backtracking matcher or a quadratic loop work hardest. */
const REPEATED = ['a', ' ', '%_', '.-', '"*', 'a\u0301', ' a']
const repeated = (pattern: string, length: number) => pattern.repeat(length).slice(0, length)

let app: Awaited<ReturnType<typeof testApp>>
let seller: { name: string; key: string }

/** The row's path with its parameters filled: the seller's name, an id that names nothing. */
const pathOf = (row: RouteRow) =>
  `/api${row.path}`
    .replace('{name}', seller.name)
    .replace('{username}', 'nobody-here')
    .replace(/\{\w+\}/g, `task_${'0'.repeat(32)}`)

/** Sends `value` in `field` of its row, with the seller's key, and returns the answer's status. */
async function sendField(field: StringField, value: string) {
  const path = pathOf(field.row)
  if (field.part === 'query')
    return (
      await app.call(field.row.method, `${path}?${new URLSearchParams({ [field.name]: value })}`, {
        key: seller.key,
      })
    ).status
  return (await app.call(field.row.method, path, { body: { [field.name]: value }, key: seller.key })).status
}

beforeAll(async () => {
  app = await testApp()
  seller = await app.register('costly-seller', {
    bio: 'a'.repeat(200),
    skills: [{ name: 'Echo', description: 'echo %_ "quoted" text', price: 0 }],
  })
  // Agents whose texts repeat what adversarial searches repeat, so a search has work to do.
  for (let index = 0; index < 30; index++)
    await app.register(`agent-${index}`, {
      bio: repeated(REPEATED[index % REPEATED.length] ?? 'a', 500),
      skills: [{ name: `Skill ${index}`, description: repeated('ab%_', 300), price: 0 }],
    })
})

describe('every string a route takes (issue 37): within the budget, linear in its length', () => {
  test('the fields come from the route table', () => {
    expect(STRING_FIELDS.length).toBeGreaterThan(20)
    expect(STRING_FIELDS.map((field) => `${field.row.id}.${field.name}`)).toContain('listAgents.q')
  })

  test(`adversarial text in every field costs at most ${REQUEST_BUDGET_MS} ms of CPU a request`, async () => {
    for (const field of STRING_FIELDS) {
      await fc.assert(
        fc.asyncProperty(trickyText(field.max), async (value) => {
          const cost = await medianCost(() => sendField(field, value), { samples: 3 })
          expect(cost).toBeLessThanOrEqual(REQUEST_BUDGET_MS)
        }),
        { numRuns: 8 },
      )
    }
  }, 600_000)

  test('doubling a repeated pattern in any field at most about doubles the work', async () => {
    const superLinear: string[] = []
    for (const field of STRING_FIELDS)
      for (const pattern of REPEATED) {
        const measured = await growth(
          (length) => sendField(field, repeated(pattern, length)),
          Math.ceil(field.max / 2),
          { floorMs: HTTP_NOISE_MS },
        )
        if (!measured.linear)
          superLinear.push(
            `${field.row.id}.${field.name} ${JSON.stringify(pattern)}: ${measured.smallMs.toFixed(2)} -> ${measured.largeMs.toFixed(2)} ms`,
          )
      }
    expect(superLinear).toEqual([])
  }, 600_000)
})

// --- Order params and request headers ---------------------------------------------------------------------------

/** Sends a raw JSON body to the seller's order route and returns the status. */
const order = async (text: string) =>
  (await app.call('POST', `/api/agents/${seller.name}/tasks`, { body: text, key: seller.key })).status

/** Params shapes a client may send, each `size` long: the JSON text of the whole order body. */
const PARAMS_SHAPES: Record<string, (size: number) => string> = {
  'many keys': (size) =>
    `{"skill":"Echo","params":{${Array.from({ length: size / 10 }, (_, i) => `"k${i}":0`).join(',')}}}`,
  'deep nesting (refused past 32 levels)': (size) =>
    `{"skill":"Echo","params":{"a":${'['.repeat(size / 2)}${']'.repeat(size / 2)}}}`,
  'a huge number': (size) => `{"skill":"Echo","params":{"n":1${'0'.repeat(size)}}}`,
  'escaped text': (size) => `{"skill":"Echo","params":{"t":"${'\\u0041\\n'.repeat(size / 8)}"}}`,
  'many short strings': (size) => `{"skill":"Echo","params":{"l":[${'"%_",'.repeat(size / 5)}"x"]}}`,
}

/** Headers the server reads, each with a route that reads it and the prefix its value takes. */
const HEADER_READERS: { header: string; method: string; path: () => string; prefix: string }[] = [
  ...['bearer', 'payment'].map((scheme) => ({
    header: 'authorization',
    method: 'POST',
    path: () => `/api/agents/${seller.name}/tasks/echo`,
    prefix: scheme === 'bearer' ? 'Bearer ' : 'Payment ',
  })),
  ...MARKET_ROUTES.flatMap((row) =>
    (row.headers ?? []).map((header) => ({
      header: header.name.toLowerCase(),
      method: row.method,
      path: () => pathOf(row),
      prefix: '',
    })),
  ),
  ...['x-wallet-signature', 'x-wallet-timestamp', 'x-wallet-address', 'x-wallet-scheme'].map((header) => ({
    header,
    method: 'PUT',
    path: () => '/api/community/users/nobody-here',
    prefix: '',
  })),
  ...['x-request-id', 'accept', 'accept-payment', 'if-none-match', 'payment-signature'].map((header) => ({
    header,
    method: 'GET',
    path: () => `/api/community/agents/${seller.name}`,
    prefix: '',
  })),
]

/** The repeated patterns a header can carry (visible ASCII: header values are bytes). */
const HEADER_PATTERNS = REPEATED.filter((pattern) => [...pattern].every((char) => char >= ' ' && char <= '~'))

describe('order params and request headers (issue 37): within the budget, linear in their size', () => {
  test('every params shape, up to the body limit, costs at most the budget and grows linearly', async () => {
    const superLinear: string[] = []
    for (const [shape, make] of Object.entries(PARAMS_SHAPES)) {
      expect(await medianCost(() => order(make(60_000)), { samples: 3 })).toBeLessThanOrEqual(
        REQUEST_BUDGET_MS,
      )
      // 7,000 and 14,000 bytes are taken (params hold up to 16 KiB); the budget is checked on 60,000 (refused).
      const measured = await growth((size) => order(make(size)), 7_000, { floorMs: HTTP_NOISE_MS })
      if (!measured.linear)
        superLinear.push(`${shape}: ${measured.smallMs.toFixed(2)} -> ${measured.largeMs.toFixed(2)} ms`)
    }
    expect(superLinear).toEqual([])
  }, 600_000)

  test('every header the server reads, up to 8 KiB of adversarial text, costs at most the budget and grows linearly', async () => {
    expect(HEADER_READERS.map((reader) => reader.header)).toContain('idempotency-key')
    const superLinear: string[] = []
    for (const reader of HEADER_READERS)
      for (const pattern of HEADER_PATTERNS) {
        const send = (length: number) =>
          app.call(reader.method, reader.path(), {
            headers: { [reader.header]: reader.prefix + repeated(pattern, length) },
            body: reader.method === 'GET' ? undefined : { skill: 'Echo' },
          })
        expect(await medianCost(() => send(8 * 1024), { samples: 3 })).toBeLessThanOrEqual(REQUEST_BUDGET_MS)
        const measured = await growth(send, 4 * 1024, { floorMs: HTTP_NOISE_MS })
        if (!measured.linear)
          superLinear.push(
            `${reader.header} ${JSON.stringify(pattern)}: ${measured.smallMs.toFixed(2)} -> ${measured.largeMs.toFixed(2)} ms`,
          )
      }
    expect(superLinear).toEqual([])
  }, 600_000)
})

// --- Order e-mail, through the SMTP listener ---------------------------------------------------------------------

const MAILBOX = 'orders@market.test'

/** A raw order message whose `part` is `size` bytes of what a hostile sender controls. */
const mailWith = (part: { headers?: string; to?: string; body?: string; subject?: string }) =>
  [
    'From: Ann Buyer <ann@buyer.test>',
    `To: ${part.to ?? MAILBOX}`,
    `Subject: ${part.subject ?? 'Echo'}`,
    `Message-ID: <${crypto.randomUUID()}@buyer.test>`,
    ...(part.headers ? [part.headers] : []),
    'MIME-Version: 1.0',
    part.body?.startsWith('Content-Type') ? '' : 'Content-Type: text/plain; charset=utf-8',
    '',
    part.body ?? '{}',
  ]
    .filter((line, index) => index < 6 || line !== '')
    .join('\r\n')

/** Messages built to make a header, address, MIME or DKIM parser work hard, each about `size` bytes. */
const MAIL_SHAPES: Record<string, (size: number) => string> = {
  'one long folded header': (size) =>
    mailWith({
      headers: `X-Long: ${'a '
        .repeat(size / 40)
        .match(/.{1,70}/g)
        ?.join('\r\n ')}`,
    }),
  'many headers': (size) =>
    mailWith({ headers: Array.from({ length: size / 12 }, (_, i) => `X-H${i}: v`).join('\r\n') }),
  'many recipients': (size) =>
    mailWith({
      to: [MAILBOX, ...Array.from({ length: size / 20 }, (_, i) => `r${i}@buyer.test`)].join(',\r\n '),
    }),
  'MIME nesting': (size) => {
    const depth = Math.floor(size / 80)
    const open = Array.from(
      { length: depth },
      (_, i) => `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n`,
    ).join('')
    const close = Array.from({ length: depth }, (_, i) => `\r\n--b${depth - 1 - i}--`).join('')
    return mailWith({ body: `${open}Content-Type: text/plain\r\n\r\n{}${close}` })
  },
  'DKIM signatures naming many headers': (size) =>
    mailWith({
      headers: Array.from(
        { length: 4 },
        () =>
          `DKIM-Signature: v=1; a=rsa-sha256; d=buyer.test; s=s; c=relaxed/relaxed;\r\n h=${'from:to:subject:'
            .repeat(size / 70)
            .match(/.{1,70}/g)
            ?.join('\r\n ')};\r\n bh=AAAA; b=AAAA`,
      ).join('\r\n'),
    }),
  'reply prefixes and quoted lines': (size) =>
    mailWith({ subject: 'Re: '.repeat(size / 8), body: `${'> {"a": "%_"}\r\n'.repeat(size / 32)}{}` }),
}

describe('order e-mail through the SMTP listener (issue 37): within the budget, linear in its size', () => {
  let listener: OrderListener
  const port = freePort()
  beforeAll(async () => {
    listener = await startOrderListener({
      market: app.market,
      mailbox: MAILBOX,
      port,
      host: '127.0.0.1',
      // Sender checks run (SPF, DKIM, DMARC parse every header and signature) against a DNS that knows nothing.
      mailAuth: {
        policy: 'report',
        resolver: async () => {
          throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' })
        },
      },
      logger: { info() {}, warn() {}, error() {} } as never,
    })
  })
  afterAll(() => listener.close())

  const transport = () => createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true })
  const send = async (raw: string) => {
    const client = transport()
    try {
      return await client.sendMail({ envelope: { from: 'ann@buyer.test', to: MAILBOX }, raw })
    } catch (error) {
      return error
    } finally {
      client.close()
    }
  }

  test(`every hostile message shape costs at most ${MAIL_BUDGET_MS} ms of CPU and grows linearly`, async () => {
    const superLinear: string[] = []
    for (const [shape, make] of Object.entries(MAIL_SHAPES)) {
      // The path under test is the order's: the message is taken (250), not refused by the session.
      const answer = (await send(make(20_000))) as { response?: string }
      expect(answer.response ?? String(answer)).toStartWith('250')
      const cost = await medianCost(() => send(make(200_000)), { samples: 3 })
      const measured = await growth((size) => send(make(size)), 50_000, { floorMs: 1 })
      expect(cost).toBeLessThanOrEqual(MAIL_BUDGET_MS)
      if (!measured.linear)
        superLinear.push(`${shape}: ${measured.smallMs.toFixed(2)} -> ${measured.largeMs.toFixed(2)} ms`)
    }
    expect(superLinear).toEqual([])
  }, 600_000)
})
