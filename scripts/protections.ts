/**
 * Removes each protection in turn and shows that its test fails: for every row of PROTECTIONS, the file is changed
 * as the row says (the protection taken out), the row's test runs and must fail, and the file is put back. A row
 * whose test still passes without its protection, or whose text is no longer in the file, fails the run.
 *
 *   bun scripts/protections.ts                  every protection
 *   bun scripts/protections.ts ipv6             only those whose name contains "ipv6"
 *   bun scripts/protections.ts ipv6 --control   also runs each test with the protection in place, where it must pass
 *                                               (a test that fails either way proves nothing)
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

/** Runs one protection's test as the files are now: whether it ran at all, whether it passed, and its output. */
function runTest(protection: Protection): { ran: boolean; passed: boolean; output: string } {
  const run = Bun.spawnSync(
    ['bun', 'test', '--timeout', '60000', protection.test, '-t', protection.name ?? ''],
    { cwd: root, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, FORCE_COLOR: '0' } },
  )
  const output = `${run.stdout.toString()}${run.stderr.toString()}`
  return { ran: /\n\s*(\d+) (pass|fail)/.test(output), passed: run.exitCode === 0, output }
}

/** Runs one protection's test with the protection removed: true when the test failed, as it must. */
function testFailsWithout(protection: Protection): { failed: boolean; output: string } {
  const removed = takeOut(protection)
  if ('missing' in removed) return { failed: false, output: removed.missing }
  try {
    const { ran, passed, output } = runTest(protection)
    return { failed: !passed && ran, output }
  } finally {
    removed.restore()
  }
}

/** With `--control`: the same test with the protection in place must run and pass. */
function testPassesWith(protection: Protection): { passed: boolean; output: string } {
  const { ran, passed, output } = runTest(protection)
  return { passed: ran && passed, output }
}

const words = process.argv.slice(2)
const control = words.includes('--control')
const only = words.find((word) => word !== '--control')
const chosen = PROTECTIONS.filter((protection) => !only || protection.id.includes(only))
let kept = 0
for (const protection of chosen) {
  const without = testFailsWithout(protection)
  const withIt = control ? testPassesWith(protection) : { passed: true, output: '' }
  const ok = without.failed && withIt.passed
  if (ok) kept++
  const why = !without.failed ? 'its test passes without it' : 'its test fails with it in place'
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${protection.id}: ${protection.what}${ok ? '' : ` (${why})`}`)
  if (!ok) console.log((without.failed ? withIt : without).output.split('\n').slice(-25).join('\n'))
}
console.log(`${kept} of ${chosen.length} protections: their test fails when they are removed`)
process.exit(kept === chosen.length ? 0 : 1)
