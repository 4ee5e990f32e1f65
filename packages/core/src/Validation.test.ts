import { describe, expect, test } from 'bun:test'
import * as v from 'valibot'
import { InvalidInputError } from './errors.ts'
import { CreateTaskInput, MAX_PARAMS_DEPTH } from './TaskInput.ts'
import { MAX_SHOWCASE_DEPTH, UpdateUserInput } from './User.ts'
import { boundedJsonObject, boundedText, HttpUrl, parseInput } from './Validation.ts'

/** An object nesting `levels` levels, itself included: every level below the first is made by `wrap`. */
function nested(levels: number, wrap: (inner: unknown) => unknown = (inner) => ({ a: inner })) {
  let value: unknown = 'leaf'
  for (let level = 1; level < levels; level++) value = wrap(value)
  return { top: value }
}

/** The field problems `parseInput` throws for `value`, or [] when it passes. */
function problemsOf(schema: v.GenericSchema, value: unknown) {
  try {
    parseInput(schema, value)
    return []
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error
    return error.errors
  }
}

/** `value` with each object and array behind a proxy that counts reads of its own properties in `reads`. */
function counted(value: unknown, reads: { count: number }): unknown {
  if (typeof value !== 'object' || value === null) return value
  const inner = Array.isArray(value)
    ? value.map((item) => counted(item, reads))
    : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, counted(item, reads)]))
  return new Proxy(inner, {
    get(target, key, receiver) {
      // An array's length is not one of its values (JSON.stringify reads it, the walk does not).
      if (typeof key === 'string' && key !== 'length' && Object.hasOwn(target, key)) reads.count++
      return Reflect.get(target, key, receiver)
    },
  })
}

describe('boundedJsonObject', () => {
  const schema = boundedJsonObject(1024, 4)

  test('behavior: an object nesting objects or arrays up to the depth passes, the object itself being level 1', () => {
    expect(v.safeParse(schema, nested(4)).success).toBe(true)
    expect(
      v.safeParse(
        schema,
        nested(4, (inner) => [inner]),
      ).success,
    ).toBe(true)
    expect(v.safeParse(schema, { a: [], b: {}, c: [1, [2, { d: 3 }]] }).success).toBe(true)
  })

  test('error: one level deeper is refused, through objects, arrays or both', () => {
    for (const value of [
      nested(5),
      nested(5, (inner) => [inner]),
      { shallow: 1, deep: [{ a: [{}] }] },
      { a: [[[[]]]] },
    ]) {
      const result = v.safeParse(schema, value)
      expect(result.success, JSON.stringify(value)).toBe(false)
      expect(result.issues?.[0]?.message).toBe('must nest objects and arrays at most 4 levels deep')
    }
  })

  test('error: 30,000 levels (a 60 KB body) are refused without exhausting the stack', () => {
    const deep = JSON.parse(`{"a":${'['.repeat(30_000)}${']'.repeat(30_000)}}`)
    const result = v.safeParse(boundedJsonObject(64 * 1024, 32), deep)
    expect(result.issues?.map((issue) => issue.message)).toEqual([
      'must nest objects and arrays at most 32 levels deep',
    ])
  })

  test('behavior: one walk reads each value once, and a value too deep is refused at its depth, never measured whole', () => {
    // Measuring the size of 30,000 nested arrays (JSON.stringify) takes about 500 ms of CPU on Bun 1.4: a too-deep
    // value must be refused after reading its first levels only. Reads are counted, not timed.
    const reads = { count: 0 }
    const deep = counted(
      nested(2_000, (inner) => [inner]),
      reads,
    )
    const result = v.safeParse(boundedJsonObject(64 * 1024, 32), deep)
    expect(result.issues?.map((issue) => issue.message)).toEqual([
      'must nest objects and arrays at most 32 levels deep',
    ])
    expect(reads.count).toBeLessThanOrEqual(33)
    // Within the limits: each value is read once by the walk and once when its size is measured.
    const wide = { a: Array.from({ length: 50 }, (_, i) => ({ b: i, c: [i, -i] })), d: 'x', e: 1e308 }
    const watched = { count: 0 }
    expect(v.safeParse(boundedJsonObject(64 * 1024, 32), counted(wide, watched)).success).toBe(true)
    const values = 3 + 50 * (1 + 2 + 2)
    expect(watched.count).toBe(2 * values)
  })

  test('error: over the size within the depth is refused for its size', () => {
    const result = v.safeParse(schema, { blob: 'x'.repeat(1024), shallow: nested(3) })
    expect(result.issues?.map((issue) => issue.message)).toEqual(['must be at most 1024 bytes of JSON'])
  })
})

describe('params and showcase depth', () => {
  test(`error: params nesting over ${MAX_PARAMS_DEPTH} levels is a 400 problem at /params`, () => {
    expect(problemsOf(CreateTaskInput, { skill: 's', params: nested(MAX_PARAMS_DEPTH) })).toEqual([])
    expect(problemsOf(CreateTaskInput, { skill: 's', params: nested(MAX_PARAMS_DEPTH + 1) })).toEqual([
      { pointer: '/params', detail: `must nest objects and arrays at most ${MAX_PARAMS_DEPTH} levels deep` },
    ])
  })

  test(`error: a showcase nesting over ${MAX_SHOWCASE_DEPTH} levels is a 400 problem at /showcase`, () => {
    expect(problemsOf(UpdateUserInput, { showcase: nested(MAX_SHOWCASE_DEPTH) })).toEqual([])
    expect(problemsOf(UpdateUserInput, { showcase: nested(MAX_SHOWCASE_DEPTH + 1) })).toEqual([
      {
        pointer: '/showcase',
        detail: `must nest objects and arrays at most ${MAX_SHOWCASE_DEPTH} levels deep`,
      },
    ])
  })
})

describe('noControlCharacters (in every text field)', () => {
  test('error: NUL, other C0 controls and DEL are refused with the character named; tab and newlines pass', () => {
    const text = boundedText(100)
    for (const [bad, code] of [
      ['a\u0000b', '0000'],
      ['a\u0007b', '0007'],
      ['a\u001bb', '001B'],
      ['a\u007fb', '007F'],
    ] as const) {
      const result = v.safeParse(text, bad)
      expect(result.success).toBe(false)
      expect(result.issues?.[0]?.message).toContain(`U+${code}`)
    }
    expect(v.safeParse(text, 'line one\r\nline two\tcolumn').success).toBe(true)
    expect(v.safeParse(HttpUrl, 'https://a.example/\u0000x').success).toBe(false)
  })
})
