import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERROR_CODES } from './errors.ts'

const root = join(import.meta.dir, '../../..')

/** Every non-test TypeScript file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.includes('generated'))
    .map((file) => readFileSync(join(dir, file), 'utf8'))
}

describe('the error catalog', () => {
  test('behavior: every `new MarketError(code, status, …)` in core and server uses its code with the catalog status', () => {
    const files = [...sources(join(root, 'packages/core/src')), ...sources(join(root, 'packages/server/src'))]
    const thrown = files.flatMap((text) => [...text.matchAll(/new MarketError\(\s*'(\w+)',\s*(\d+)/g)])
    expect(thrown.length).toBeGreaterThan(3)
    for (const [, code, status] of thrown)
      expect(ERROR_CODES[code as keyof typeof ERROR_CODES], code).toBe(Number(status) as never)
  })

  test("behavior: the README's table lists exactly the catalog, each code under its status", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const listed = [...readme.matchAll(/^\| (\d{3})\s+\| (.+?)\s*\|$/gm)].flatMap(([, status, codes]) =>
      [...(codes ?? '').matchAll(/`(\w+)`/g)].map(([, code]) => [code, Number(status)]),
    )
    expect(Object.fromEntries(listed)).toEqual(ERROR_CODES)
  })
})
