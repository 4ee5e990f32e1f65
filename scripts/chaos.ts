/**
 * The chaos suite's long form: every fault of tests/chaos.test.ts repeated `--rounds` times within its load (CI runs
 * each once), and the figures each fault printed: writes, acknowledged, lost, duplicated, unexpected 5xx, the answers
 * by status, the slowest answer and the slowest recovery. Exits non-zero when any verdict failed.
 *
 *   bun scripts/chaos.ts                 each fault 5 times
 *   bun scripts/chaos.ts --rounds 20     each fault 20 times
 *   bun scripts/chaos.ts --only relay    only the faults whose test name contains "relay"
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, only: { type: 'string' } },
})
const rounds = Number(values.rounds)
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error(`chaos: --rounds must be a whole number of at least 1, not "${values.rounds}"`)
  process.exit(2)
}
const filter = values.only ? ['-t', values.only] : []
const child = Bun.spawn(
  ['bun', 'test', 'tests/chaos.test.ts', '--timeout', String(rounds * 240_000), ...filter],
  {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, CHAOS_ROUNDS: String(rounds) },
    stdout: 'pipe',
    stderr: 'pipe',
  },
)
const [out, err, code] = await Promise.all([
  new Response(child.stdout).text(),
  new Response(child.stderr).text(),
  child.exited,
])
const lines = `${out}\n${err}`.split('\n')
console.log(`chaos, ${rounds} round(s) of each fault:`)
for (const line of lines.filter((text) => text.startsWith('chaos '))) console.log(`  ${line}`)
for (const line of lines.filter((text) => /^\((pass|fail)\)/.test(text))) console.log(`  ${line}`)
if (code !== 0) console.log(err.split('\n').slice(-40).join('\n'))
process.exit(code)
