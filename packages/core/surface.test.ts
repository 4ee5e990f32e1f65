import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

// The public surface of @agentmarket/core: every entry point of package.json's "exports", its runtime names and its
// exported type names, pinned in surface.json. A name added, removed or moved between entries is an API change: it
// fails here until surface.json is updated (UPDATE_SURFACE=1 bun test packages/core/surface.test.ts) and a changeset
// says so (bun run changeset).

const here = import.meta.dir
const PIN = join(here, 'surface.json')
const HOW =
  'The public surface of @agentmarket/core changed. If that is meant, run UPDATE_SURFACE=1 bun test packages/core/surface.test.ts to update packages/core/surface.json, and add a changeset (bun run changeset) that names the change.'

/** One entry point's names: the values a module import sees, and the types only TypeScript sees. */
type Surface = { runtime: string[]; types: string[] }

const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')) as {
  exports: Record<string, { bun: string; types: string; default: string }>
}

/** The names an entry file exports, read from its source: each statement must name what it exports. */
function declaredNames(file: string): Surface & { wildcards: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  const runtime: string[] = []
  const types: string[] = []
  const wildcards: string[] = []
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue
    const clause = statement.exportClause
    if (!clause || !ts.isNamedExports(clause)) {
      wildcards.push(statement.getText(source))
      continue
    }
    for (const element of clause.elements)
      (statement.isTypeOnly || element.isTypeOnly ? types : runtime).push(element.name.text)
  }
  return { runtime: runtime.sort(), types: types.sort(), wildcards }
}

/** Every entry point's surface, by its subpath (`.`, `./rows`, ...). */
async function surfaces(): Promise<Record<string, Surface>> {
  const all: Record<string, Surface> = {}
  for (const [subpath, targets] of Object.entries(manifest.exports)) {
    const declared = declaredNames(join(here, targets.bun))
    const runtime = Object.keys(await import(`@agentmarket/core${subpath.slice(1)}`)).sort()
    // A name exported without `type` that is only a type would vanish at run time: the two lists must agree.
    expect(declared.runtime, `${targets.bun}: values as written vs as imported`).toEqual(runtime)
    all[subpath] = { runtime, types: declared.types }
  }
  return all
}

describe('the public surface of @agentmarket/core', () => {
  test('behavior: every entry point names its exports (no export *), as values and types TypeScript agrees on', () => {
    for (const targets of Object.values(manifest.exports)) {
      const declared = declaredNames(join(here, targets.bun))
      expect(declared.wildcards, `${targets.bun} re-exports a whole module`).toEqual([])
      expect(declared.runtime.length + declared.types.length).toBeGreaterThan(0)
    }
  })

  test('behavior: each entry point exports exactly the names pinned in surface.json', async () => {
    const actual = await surfaces()
    if (process.env.UPDATE_SURFACE === '1') writeFileSync(PIN, `${JSON.stringify(actual, null, 2)}\n`)
    const pinned = JSON.parse(readFileSync(PIN, 'utf8')) as Record<string, Surface>
    expect(Object.keys(actual), HOW).toEqual(Object.keys(pinned))
    for (const [subpath, surface] of Object.entries(actual)) {
      expect(surface.runtime, `${HOW} (${subpath}: runtime names)`).toEqual(pinned[subpath]?.runtime ?? [])
      expect(surface.types, `${HOW} (${subpath}: type names)`).toEqual(pinned[subpath]?.types ?? [])
    }
  })

  test('behavior: the build writes every entry point (scripts/build-packages.ts) where package.json points', () => {
    const build = readFileSync(join(here, '../../scripts/build-packages.ts'), 'utf8')
    for (const targets of Object.values(manifest.exports)) {
      const source = targets.bun.replace(/^\.\//, '')
      expect(build, `scripts/build-packages.ts does not build ${source}`).toContain(`'${source}'`)
      const built = source.replace(/^src\//, './dist/').replace(/\.ts$/, '')
      expect([targets.types, targets.default]).toEqual([`${built}.d.ts`, `${built}.js`])
    }
  })
})
