import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ensurePackagesBuilt } from '../support/examples.ts'
import { type MarketServer, runToEnd, startMarketServer } from '../support/process.ts'

// @agentmarket/client runs wherever fetch does (Node.js 20+, Bun, Deno, browsers): its runtime code imports no
// node: or bun: module and uses no Bun global, and its built dist/ drives a real server under Node.js.

const root = resolve(import.meta.dir, '../..')
const src = join(root, 'packages/client/src')
const folder = mkdtempSync(join(tmpdir(), 'client-node-'))
// Starting node and the server: a verdict is what node printed and how it exited; this bound only ends a hang.
const HANG_BOUND_MS = 900_000
let server: MarketServer

beforeAll(async () => {
  await ensurePackagesBuilt()
  server = await startMarketServer({ HOME: folder, DATABASE_URL: `file:${join(folder, 'market.db')}` })
}, HANG_BOUND_MS)

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** The modules a source file imports (static and dynamic). */
const importsOf = (text: string) =>
  [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((match) => match[1] ?? '')

describe('@agentmarket/client on every runtime', () => {
  test('behavior: its runtime code imports no node: or bun: module and uses no Bun or process global', () => {
    const files = readdirSync(src).filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts'))
    expect(files.length).toBeGreaterThan(5)
    const found: string[] = []
    for (const file of [
      ...files.map((name) => join(src, name)),
      join(root, 'packages/client/dist/index.js'),
    ]) {
      const text = readFileSync(file, 'utf8')
      for (const name of importsOf(text))
        if (/^(node:|bun:?)/.test(name) || name === 'bun') found.push(`${file}: ${name}`)
      if (/\bBun\.|\bprocess\./.test(text)) found.push(`${file}: a Bun or process global`)
    }
    expect(found).toEqual([])
  })

  test(
    'behavior: under Node.js the built client registers, finds, orders, delivers, waits and reads a refusal',
    async () => {
      const run = await runToEnd(['node', 'tests/client/node.mjs'], {
        cwd: root,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BASE_URL: server.base },
      })
      expect(run.stderr).toBe('')
      expect(run.exitCode).toBe(0)
      const out = JSON.parse(run.stdout)
      expect(out.node).toBeGreaterThanOrEqual(20)
      expect(out).toMatchObject({
        found: ['node-seller'],
        ordered: 'paid',
        queued: [out.task],
        done: { status: 'completed', result_url: 'https://results.example/echo' },
        refused: { isError: true, status: 404, code: 'task_not_found' },
      })
    },
    HANG_BOUND_MS,
  )
})
