import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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
    // dist/ too: its entry and the chunks it loads on demand (the payment rails).
    const dist = join(root, 'packages/client/dist')
    const built = readdirSync(dist).filter((file) => file.endsWith('.js'))
    expect(built).toContain('index.js')
    const found: string[] = []
    for (const file of [...files.map((name) => join(src, name)), ...built.map((name) => join(dist, name))]) {
      const text = readFileSync(file, 'utf8')
      for (const name of importsOf(text))
        if (/^(node:|bun:?)/.test(name) || name === 'bun') found.push(`${file}: ${name}`)
      if (/\bBun\.|\bprocess\./.test(text)) found.push(`${file}: a Bun or process global`)
    }
    expect(found).toEqual([])
  })

  test(
    'behavior: bundled with code splitting, a page that reads and sells loads no payment code (viem, x402, mppx) until it pays',
    async () => {
      const out = mkdtempSync(join(tmpdir(), 'client-bundle-'))
      try {
        const entry = join(out, 'entry.ts')
        writeFileSync(
          entry,
          `import { createClient } from '${join(src, 'index.ts')}'\nconsole.log(createClient)\n`,
        )
        const built = await Bun.build({
          entrypoints: [entry],
          target: 'browser',
          format: 'esm',
          minify: true,
          splitting: true,
          outdir: join(out, 'dist'),
        })
        expect(built.success).toBe(true)
        // The files the entry loads before any payment: itself and what it imports statically.
        const loaded = new Set<string>()
        const load = (file: string) => {
          if (loaded.has(file)) return
          loaded.add(file)
          const text = readFileSync(join(out, 'dist', file), 'utf8')
          for (const match of text.matchAll(/import\s*(?:[^'"()]*?from\s*)?["']\.\/([^"']+)["']/g))
            load(match[1] ?? '')
        }
        load('entry.js')
        const bytes = (files: Iterable<string>) =>
          [...files].reduce((sum, file) => sum + readFileSync(join(out, 'dist', file)).length, 0)
        const everything = built.outputs.map((output) => output.path.slice(join(out, 'dist').length + 1))
        // Measured: about 17 KiB loaded of about 1.1 MiB in all; the payment rails stay in chunks loaded on demand.
        expect(bytes(loaded)).toBeLessThan(100 * 1024)
        expect(bytes(everything)).toBeGreaterThan(500 * 1024)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    },
    HANG_BOUND_MS,
  )

  /** Runs the built client's walk (anyRuntime.mjs) with `command` as seller `seller`; answers what it printed. */
  async function walk(command: string[], seller: string) {
    const run = await runToEnd([...command, 'tests/client/anyRuntime.mjs'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        BASE_URL: server.base,
        SELLER: seller,
        NO_COLOR: '1',
      },
    })
    expect(run.stderr).toBe('')
    expect(run.exitCode).toBe(0)
    const out = JSON.parse(run.stdout)
    expect(out).toMatchObject({
      found: [seller],
      ordered: 'paid',
      queued: [out.task],
      done: { status: 'completed', result_url: 'https://results.example/echo' },
      refused: { isError: true, status: 404, code: 'task_not_found' },
    })
    // The built package (its import condition), not the TypeScript sources Bun would take.
    expect(out.resolved).toEndWith('/packages/client/dist/index.js')
    return out
  }

  test(
    'behavior: under Node.js the built client registers, finds, orders, delivers, waits and reads a refusal',
    async () => {
      const out = await walk(['node'], 'node-seller')
      expect(out.runtime).toBe('node')
      expect(out.node).toBeGreaterThanOrEqual(20)
    },
    HANG_BOUND_MS,
  )

  test(
    "behavior: under Deno (the deno npm package, reading the project's node_modules) the built client does the same",
    async () => {
      const out = await walk(
        [join(root, 'node_modules/.bin/deno'), 'run', '--allow-net', '--allow-env', '--allow-read'],
        'deno-seller',
      )
      expect(out.runtime).toBe('deno')
    },
    HANG_BOUND_MS,
  )
})
