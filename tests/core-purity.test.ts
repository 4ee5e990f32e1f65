import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const coreSource = resolve(import.meta.dir, '../packages/core/src')
const forbidden = [/^elysia/, /^drizzle/, /libsql/, /^bun:/, /^bun$/, /^@agentmarket\/server/]

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

describe('@agentmarket/core', () => {
  test('behavior: imports no web framework, database driver or Bun-only module', () => {
    const files = sourceFiles(coreSource)
    expect(files.length).toBeGreaterThan(10)
    for (const file of files) {
      const specifiers = [
        ...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g),
      ].map((m) => m[1] ?? '')
      for (const specifier of specifiers) {
        expect(
          forbidden.some((pattern) => pattern.test(specifier)),
          `${file} imports ${specifier}`,
        ).toBe(false)
      }
    }
  })
})
