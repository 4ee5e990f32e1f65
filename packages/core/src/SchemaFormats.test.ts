import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { FORMAT_CHECKERS } from './SchemaFormats.ts'

const CASES: Record<string, [string[], string[]]> = {
  date: [
    ['2026-02-28', '2024-02-29'],
    ['2026-02-29', '2026-13-01', '26-01-01', '2026-1-01'],
  ],
  time: [
    ['12:30:00Z', '23:59:60Z', '12:30:00.5+02:00'],
    ['12:30:00', '24:00:00Z', '12:30:60Z', '12:30:00+2:00'],
  ],
  'date-time': [
    ['2026-06-01T12:00:00Z', '2026-06-01 12:00:00.123-05:00'],
    ['2026-06-01', '2026-06-01T12:00Z'],
  ],
  duration: [
    ['P1Y2M3D', 'PT4H', 'P2W', 'P1DT2H3M4S', 'P3M4D'],
    ['P', 'PT', 'P1Y3D', 'P2W1D', 'P1H', 'PT1D'],
  ],
  email: [
    ['a@b.co', 'first.last+tag@example.com', '"x y"@example.com', 'a@[127.0.0.1]'],
    ['a', '.a@b.co', 'a..b@c.co', 'a@-b.co'],
  ],
  hostname: [
    ['example.com', 'a-b.c', 'localhost'],
    ['-a.com', 'a_b.com', '', 'a..b', `${'a'.repeat(64)}.com`],
  ],
  ipv4: [
    ['127.0.0.1', '255.255.255.255'],
    ['256.0.0.1', '1.2.3', '1.2.3.4.5', 'a.b.c.d'],
  ],
  ipv6: [
    ['::1', '2001:db8::1', '1:2:3:4:5:6:7:8', '::ffff:1.2.3.4'],
    ['1:2:3:4:5:6:7:8:9', '1::2::3', '12345::', ':::'],
  ],
  uri: [
    ['https://example.com/a?b=c#d', 'urn:isbn:0451450523', 'mailto:a@b.co'],
    ['/relative', 'http://a b', '1http://a', 'http://x/%zz'],
  ],
  'uri-reference': [
    ['/relative?x=1', 'https://a.b/c', '#frag', ''],
    ['a b', '%zz', 'a#b#c'],
  ],
  url: [
    ['https://example.com/a?b=c', 'http://93.184.216.34/', 'ftp://files.example.org/x'],
    ['https://localhost/', 'http://10.0.0.1/', 'mailto:a@b.co', 'https://a b.com', 'https://example'],
  ],
  uuid: [
    ['123e4567-e89b-12d3-a456-426614174000'],
    ['123e4567e89b12d3a456426614174000', '123e4567-e89b-12d3-a456-42661417400g'],
  ],
  'json-pointer': [
    ['', '/a/b', '/a~0b/~1'],
    ['a', '/a~2'],
  ],
}

describe('formats of skill inputs', () => {
  test('behavior: each checked format takes its well-formed values and refuses malformed ones', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(FORMAT_CHECKERS).sort())
    for (const [name, [good, bad]] of Object.entries(CASES)) {
      const check = FORMAT_CHECKERS[name] as (text: string) => boolean
      for (const text of good) expect(check(text), `${name} ${text}`).toBe(true)
      for (const text of bad) expect(check(text), `${name} ${text}`).toBe(false)
    }
  })

  test('cost guard: a 16 KiB value built to make a backtracking checker explode costs every format linear CPU', () => {
    // Repetitions of short pieces from each format's alphabet, the shape that makes nested quantifiers backtrack.
    const piece = fc.stringMatching(/^[a-z0-9.\-:/@%[\]~_!]{1,4}$/)
    let worst = 0
    fc.assert(
      fc.property(
        fc.array(piece, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('', '!', ' ', '..'),
        (pieces, end) => {
          const unit = pieces.join('')
          const text = `http://${unit.repeat(Math.ceil(16_000 / unit.length))}${end}`.slice(0, 16 * 1024)
          const start = process.cpuUsage()
          for (const check of Object.values(FORMAT_CHECKERS)) check(text)
          const spent = process.cpuUsage(start)
          worst = Math.max(worst, (spent.user + spent.system) / 1000)
        },
      ),
      { numRuns: 60 },
    )
    // Thirteen one-pass checks over 16 KiB take well under a millisecond each; the validator's own url expression
    // took 1.2 s over 394 bytes. The margin is for a loaded machine.
    expect(worst).toBeLessThan(250)
  })
})
