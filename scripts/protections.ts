/**
 * Removes each protection in turn and shows that its test fails: for every row of PROTECTIONS, the file is changed
 * as the row says (the protection taken out), the row's test runs and must fail, and the file is put back. A row
 * whose test still passes without its protection, or whose text is no longer in the file, fails the run.
 *
 *   bun scripts/protections.ts            every protection
 *   bun scripts/protections.ts ipv6       only those whose name contains "ipv6"
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROTECTIONS, type Protection } from './protections.table.ts'

const root = join(import.meta.dir, '..')

/** Applies each edit of `protection` (each text found exactly once), or says which is not there. */
function takeOut(protection: Protection): { restore: () => void } | { missing: string } {
  const originals = new Map<string, string>()
  for (const edit of protection.edits) {
    const path = join(root, edit.file)
    const text = readFileSync(path, 'utf8')
    if (!originals.has(path)) originals.set(path, text)
    const count = text.split(edit.find).length - 1
    if (count !== 1) {
      for (const [changed, original] of originals) writeFileSync(changed, original)
      return { missing: `the text to remove is found ${count} times in ${edit.file}, not once: ${edit.find}` }
    }
    writeFileSync(path, text.replace(edit.find, edit.replace))
  }
  return {
    restore: () => {
      for (const [path, original] of originals) writeFileSync(path, original)
    },
  }
}

/** Runs one protection's test with the protection removed: true when the test failed, as it must. */
function testFailsWithout(protection: Protection): { failed: boolean; output: string } {
  const removed = takeOut(protection)
  if ('missing' in removed) return { failed: false, output: removed.missing }
  try {
    const run = Bun.spawnSync(
      ['bun', 'test', '--timeout', '60000', protection.test, '-t', protection.name ?? ''],
      { cwd: root, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, FORCE_COLOR: '0' } },
    )
    const output = `${run.stdout.toString()}${run.stderr.toString()}`
    const ran = /\n\s*(\d+) (pass|fail)/.test(output)
    return { failed: run.exitCode !== 0 && ran, output }
  } finally {
    removed.restore()
  }
}

const only = process.argv[2]
const chosen = PROTECTIONS.filter((protection) => !only || protection.id.includes(only))
let kept = 0
for (const protection of chosen) {
  const { failed, output } = testFailsWithout(protection)
  if (failed) kept++
  console.log(`${failed ? 'ok  ' : 'FAIL'} ${protection.id}: ${protection.what}`)
  if (!failed) console.log(output.split('\n').slice(-25).join('\n'))
}
console.log(`${kept} of ${chosen.length} protections: their test fails when they are removed`)
process.exit(kept === chosen.length ? 0 : 1)
