/**
 * Lints the OpenAPI document a demo marketplace serves (36 agents, 70 paid operations, machine payments on) with
 * Redocly CLI's recommended rules and Spectral's `oas` rules, the two linters API tooling runs most.
 * Usage: bun run lint:openapi   (exits 1 on any error or warning, printing each)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { defaultConfig, Marketplace, manualClock } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { createApp } from '../packages/server/src/app.ts'
import { seedDemo } from '../packages/server/src/demo.ts'

const ROOT = resolve(import.meta.dir, '..')
// A public origin: linters flag localhost and example.com servers.
const BASE_URL = 'https://market.example.org'

/** One finding of a linter: its rule, where, and what it says. */
export type LintFinding = { linter: 'redocly' | 'spectral'; rule: string; at: string; message: string }

/** The OpenAPI document of a seeded demo market with machine payments on, as GET /api/openapi.json serves it. */
export async function demoOpenApiDocument(): Promise<Record<string, unknown>> {
  const store = libsqlStore(await openDatabase(':memory:'))
  const now = new Date()
  const clock = manualClock(now)
  const mpp = {
    secretKey: 'lint-openapi-secret-of-at-least-32-bytes',
    realm: 'market.example.org',
    currency: '0x20C000000000000000000000b9537d11c60E8b50',
    getClient: () => {
      throw new Error('no payment is made while linting')
    },
  } as const
  const market = Marketplace.create({ store, config: defaultConfig(BASE_URL), clock, mpp })
  await seedDemo(market, store, { now, baseUrl: BASE_URL, clock })
  const app = createApp({ market, baseUrl: BASE_URL })
  const document = await (await app.handle(new Request('http://localhost/api/openapi.json'))).json()
  await store.close()
  return document
}

async function run(command: string[]): Promise<string> {
  const child = Bun.spawn(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out] = await Promise.all([new Response(child.stdout).text(), child.exited])
  return out
}

/** Every error and warning of both linters on `document` (written to a temporary file for them). */
export async function lintOpenApi(document: Record<string, unknown>): Promise<LintFinding[]> {
  const folder = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
  const file = join(folder, 'openapi.json')
  writeFileSync(file, JSON.stringify(document, null, 2))
  try {
    const bin = (name: string) => join(ROOT, 'node_modules/.bin', name)
    const [redocly, spectral] = await Promise.all([
      run([
        'bun',
        '--bun',
        bin('redocly'),
        'lint',
        file,
        '--format=json',
        `--config=${join(ROOT, 'redocly.yaml')}`,
      ]),
      run(['bun', '--bun', bin('spectral'), 'lint', file, '-f', 'json', '-r', join(ROOT, '.spectral.yaml')]),
    ])
    const redoclyProblems = (JSON.parse(redocly) as { problems: RedoclyProblem[] }).problems
    const spectralProblems = JSON.parse(spectral.slice(0, spectral.lastIndexOf(']') + 1)) as SpectralProblem[]
    return [
      ...redoclyProblems.map((p) => ({
        linter: 'redocly' as const,
        rule: p.ruleId,
        at: p.location[0]?.pointer ?? '',
        message: p.message,
      })),
      // Spectral severities: 0 error, 1 warning, 2 info, 3 hint.
      ...spectralProblems
        .filter((p) => p.severity <= 1)
        .map((p) => ({
          linter: 'spectral' as const,
          rule: p.code,
          at: p.path.join('.'),
          message: p.message,
        })),
    ]
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

type RedoclyProblem = { ruleId: string; message: string; location: { pointer?: string }[] }
type SpectralProblem = { code: string; message: string; path: string[]; severity: number }

if (import.meta.main) {
  const findings = await lintOpenApi(await demoOpenApiDocument())
  for (const f of findings) console.error(`${f.linter} ${f.rule} ${f.at}: ${f.message}`)
  console.log(`redocly recommended + spectral:oas: ${findings.length} findings`)
  process.exit(findings.length ? 1 : 0)
}
