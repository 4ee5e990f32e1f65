import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const coreSource = resolve(import.meta.dir, '../packages/core/src')
/** The stores' sources (and the SQL they share), which Node hosts run too. */
const STORE_SOURCES = ['store-sql', 'store-libsql', 'store-postgres'].map((name) =>
  resolve(import.meta.dir, `../packages/${name}/src`),
)
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

  test('behavior: core and the stores use no Bun global, so Node and other hosts run them', () => {
    const files = [...sourceFiles(coreSource), ...STORE_SOURCES.flatMap(sourceFiles)]
    for (const file of files)
      expect(/\bBun\./.test(readFileSync(file, 'utf8')), `${file} uses Bun`).toBe(false)
  })

  test('behavior: every export of core and the stores carries a JSDoc comment', () => {
    const undocumented: string[] = []
    for (const file of [...sourceFiles(coreSource), ...STORE_SOURCES.flatMap(sourceFiles)]) {
      const lines = readFileSync(file, 'utf8').split('\n')
      lines.forEach((line, index) => {
        if (!/^export (async )?(function|const|class|type|interface|let) \w/.test(line)) return
        if (!lines[index - 1]?.trimEnd().endsWith('*/')) undocumented.push(`${file}:${index + 1}`)
      })
    }
    expect(undocumented).toEqual([])
  })
})
