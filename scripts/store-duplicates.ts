/**
 * Counts what the two SQL stores write twice: the lines of store-libsql/src that stand in a run of six or more
 * identical code lines (trimmed; blank lines and comments left out) somewhere in store-postgres/src. Prints the count
 * per file and the total; decision 0007 records it before and after each step of the shared SQL layer.
 * Usage: bun scripts/store-duplicates.ts
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'

const root = resolve(import.meta.dir, '..')
/** How many consecutive identical lines make a run. */
const RUN = 6

/** The TypeScript files under `folder`. */
const sourceFiles = (folder: string): string[] =>
  readdirSync(folder).flatMap((name) => {
    const path = join(folder, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return path.endsWith('.ts') ? [path] : []
  })

/** A file's code lines, trimmed: no blank lines, comments or lines of three characters or fewer. */
const codeLines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 3 && !/^(\/\/|\/\*\*|\*)/.test(line))

/** The run of `RUN` lines starting at `index`, as one key. */
const runAt = (lines: string[], index: number) => lines.slice(index, index + RUN).join('\n')

const postgresRuns = new Set<string>()
for (const file of sourceFiles(join(root, 'packages/store-postgres/src'))) {
  const lines = codeLines(file)
  for (let index = 0; index + RUN <= lines.length; index++) postgresRuns.add(runAt(lines, index))
}

let total = 0
for (const file of sourceFiles(join(root, 'packages/store-libsql/src'))) {
  const lines = codeLines(file)
  const shared = new Set<number>()
  for (let index = 0; index + RUN <= lines.length; index++)
    if (postgresRuns.has(runAt(lines, index)))
      for (let line = index; line < index + RUN; line++) shared.add(line)
  if (shared.size > 0) console.log(`${String(shared.size).padStart(5)}  ${relative(root, file)}`)
  total += shared.size
}
console.log(`${String(total).padStart(5)}  lines of store-libsql/src repeated in store-postgres/src`)
