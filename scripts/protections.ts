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

/** Runs one protection's test with the protection removed: true when the test failed, as it must. */
function testFailsWithout(protection: Protection): { failed: boolean; output: string } {
  const path = join(root, protection.file)
  const original = readFileSync(path, 'utf8')
  const count = original.split(protection.find).length - 1
  if (count !== 1)
    return {
      failed: false,
      output: `the text to remove is found ${count} times in ${protection.file}, not once`,
    }
  writeFileSync(path, original.replace(protection.find, protection.replace))
  try {
    const run = Bun.spawnSync(
      ['bun', 'test', '--timeout', '60000', protection.test, '-t', protection.name ?? ''],
      { cwd: root, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, FORCE_COLOR: '0' } },
    )
    const output = `${run.stdout.toString()}${run.stderr.toString()}`
    const ran = /\n\s*(\d+) (pass|fail)/.test(output)
    return { failed: run.exitCode !== 0 && ran, output }
  } finally {
    writeFileSync(path, original)
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
