/**
 * Dependency audit for CI: `bun audit --prod` against the npm advisory database, reported in a few lines. Fails (exit
 * 1) on a critical advisory in a production dependency; an unreachable advisory database is reported, not failed:
 * the audit then checked nothing, and says so.
 * Usage: bun scripts/audit.ts
 */

type Advisory = { title?: string; severity?: string; url?: string; vulnerable_versions?: string }

const SEVERITIES = ['critical', 'high', 'moderate', 'low']

/** Runs `bun audit` and returns what it printed and how it ended (null: it ran out of time). */
async function runAudit(): Promise<{ exitCode: number | null; stdout: string; stderr: string }> {
  const child = Bun.spawn(['bun', 'audit', '--prod', '--json'], { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => child.kill(), 60_000)
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  clearTimeout(timer)
  return { exitCode: child.signalCode ? null : exitCode, stdout, stderr }
}

/** The advisories of `bun audit --json` (package name -> advisories), or null when the output is not that. */
function advisoriesOf(stdout: string): [string, Advisory[]][] | null {
  try {
    const report = JSON.parse(stdout || '{}') as Record<string, Advisory[]>
    return Object.entries(report).filter(([, list]) => Array.isArray(list))
  } catch {
    return null
  }
}

/** What the audit says, in lines, and the exit code CI gets: 1 only for a critical advisory. */
export function summarize(
  exitCode: number | null,
  stdout: string,
  stderr: string,
): { lines: string[]; code: number } {
  const found = advisoriesOf(stdout)
  const unreachable = /error:.*(advisories|registry|fetch|ECONN|ENOTFOUND|\b[45]\d\d\b)/i.exec(
    stderr + stdout,
  )
  if (exitCode === null || unreachable || found === null) {
    const reason =
      exitCode === null ? 'no answer within 60 s' : (unreachable?.[0] ?? stderr.trim().split('\n').at(-1))
    return {
      lines: [`dependency audit: NOT CHECKED, the advisory database could not be used (${reason})`],
      code: 0,
    }
  }
  const all = found.flatMap(([name, list]) => list.map((advisory) => ({ name, ...advisory })))
  const counts = SEVERITIES.map((level) => `${all.filter((a) => a.severity === level).length} ${level}`).join(
    ', ',
  )
  return {
    lines: [
      `dependency audit (production dependencies): ${all.length} advisories (${counts})`,
      ...all.map(
        (a) => `  ${a.severity}: ${a.name} ${a.vulnerable_versions ?? ''} ${a.title ?? ''} ${a.url ?? ''}`,
      ),
    ],
    code: all.some((advisory) => advisory.severity === 'critical') ? 1 : 0,
  }
}

if (import.meta.main) {
  const { exitCode, stdout, stderr } = await runAudit()
  const { lines, code } = summarize(exitCode, stdout, stderr)
  for (const line of lines) console.log(line)
  process.exit(code)
}
