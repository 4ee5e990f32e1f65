import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import serverPackage from '../packages/server/package.json' with { type: 'json' }
import { startPostgres } from './support/postgres.ts'
import { freePort, runToEnd, waitForOk } from './support/process.ts'

const root = resolve(import.meta.dir, '..')
const buildFolder = mkdtempSync(join(tmpdir(), 'agentmarket-build-'))
const runFolder = mkdtempSync(join(tmpdir(), 'agentmarket-run-'))
const binary = join(buildFolder, 'agentmarket')

beforeAll(async () => {
  const build = await runToEnd(['bun', 'run', 'build', '--outfile', binary], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '' },
  })
  if (build.exitCode !== 0) throw new Error(`build failed: ${build.stderr}`)
}, 300_000)

afterAll(() => {
  rmSync(buildFolder, { recursive: true, force: true })
  rmSync(runFolder, { recursive: true, force: true })
})

/** Starts the binary from an unrelated folder with nothing but the variables given. */
async function startBinary(
  port: number,
  databaseUrl = 'file:./fresh/market.db',
  env: Record<string, string> = {},
) {
  const child = Bun.spawn([binary], {
    cwd: runFolder,
    env: { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, ...env },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const startMs = await waitForOk(`http://127.0.0.1:${port}/api/community/health`, child)
  return { child, startMs }
}

describe('the single binary', () => {
  test('behavior: starts from another folder on a new file database, with no node_modules, and keeps data', async () => {
    // The size the README states stays true (within 10%): a user downloading it is told what to expect.
    const readme = await Bun.file(new URL('../README.md', import.meta.url)).text()
    const stated = Number(/dist\/agentmarket \(about (\d+) MiB/.exec(readme)?.[1])
    const mebibytes = statSync(binary).size / 1024 / 1024
    expect(Math.abs(mebibytes - stated) / stated).toBeLessThan(0.1)
    const port = freePort()
    const first = await startBinary(port)
    console.log(
      `binary: ${(statSync(binary).size / 1024 / 1024).toFixed(1)} MiB, first health after ${first.startMs.toFixed(0)} ms`,
    )
    const base = `http://127.0.0.1:${port}`
    const registered = await fetch(`${base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'binary-agent',
        skills: [{ name: 'Paid', type: 'purchasable', price: 0.01 }],
      }),
    })
    expect(registered.status).toBe(200)
    const { apiKey } = (await registered.json()) as { apiKey: string }
    expect(
      (
        await fetch(`${base}/api/agents/binary-agent/heartbeat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}` },
        })
      ).status,
    ).toBe(200)
    const script = await fetch(`${base}/api/docs/assets/swagger-ui-bundle.js`)
    expect(script.status).toBe(200)
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000)
    const document = (await (await fetch(`${base}/api/openapi.json`)).json()) as { openapi: string }
    expect(document.openapi).toBe('3.1.0')
    // The MCP SDK is loaded on the first MCP request: that import must resolve inside the binary too.
    const tools = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    const listed = (await tools.json()) as { result: { tools: { name: string }[] } }
    expect(listed.result.tools.map((tool) => tool.name)).toContain('register_agent')
    // So is the A2A SDK, on the first A2A request.
    const a2a = await fetch(`${base}/a2a/agents/binary-agent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'task_unknown' } }),
    })
    const answer = (await a2a.json()) as { id: number; error?: { code: number } }
    expect(answer.id).toBe(2)
    expect(answer.error?.code).toBe(-32001)
    first.child.kill()
    await first.child.exited
    expect(statSync(join(runFolder, 'fresh/market.db')).size).toBeGreaterThan(0)

    // The mail modules load at start when the order mailbox is on: the server answers only once they have.
    const second = await startBinary(port, 'file:./fresh/market.db', {
      SMTP_INBOUND_PORT: String(freePort()),
      ORDER_MAILBOX: 'orders@localhost',
    })
    const agent = (await (await fetch(`${base}/api/community/agents/binary-agent`)).json()) as {
      skills: { price: number }[]
      heartbeat: { lastSeen: string | null }
    }
    expect(agent.skills[0]?.price).toBe(0.01)
    expect(agent.heartbeat.lastSeen).not.toBeNull()
    second.child.kill()
    await second.child.exited
  })

  test('behavior: on a postgres:// DATABASE_URL it migrates, serves and keeps data in PostgreSQL', async () => {
    const postgres = await startPostgres()
    try {
      const url = await postgres.createDatabase()
      const port = freePort()
      const first = await startBinary(port, url)
      const registered = await fetch(`http://127.0.0.1:${port}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'binary-on-postgres' }),
      })
      expect(registered.status).toBe(200)
      first.child.kill()
      await first.child.exited
      const second = await startBinary(port, url)
      const agent = await fetch(`http://127.0.0.1:${port}/api/community/agents/binary-on-postgres`)
      expect(agent.status).toBe(200)
      second.child.kill()
      await second.child.exited
    } finally {
      await postgres.stop()
    }
  })

  test('behavior: --version, --help and a typo answer without a database; the demo names the binary and its database', async () => {
    const folder = mkdtempSync(join(buildFolder, 'cwd-'))
    const run = (words: string[], env: Record<string, string> = {}) =>
      runToEnd([binary, ...words], { cwd: folder, env })
    const version = await run(['--version'])
    expect(version).toEqual({ exitCode: 0, stdout: `${serverPackage.version}\n`, stderr: '' })
    const help = await run(['--help'])
    expect(help.exitCode).toBe(0)
    expect(help.stdout).toContain('migrate')
    const typo = await run(['serv'])
    expect(typo.exitCode).toBe(2)
    expect(typo.stderr).toContain('did you mean "serve"?')
    expect(readdirSync(folder)).toEqual([])
    const demo = await run(['demo'], { DATABASE_URL: 'file:./demo/market.db' })
    expect(demo.exitCode).toBe(0)
    expect(demo.stdout).toContain(`\n  DATABASE_URL=file:./demo/market.db ${binary}\n`)
  }, 300_000)
  test('behavior: bench verify runs on the anvil of the PATH, and without one says how to get it, exit 2', async () => {
    const folder = mkdtempSync(join(buildFolder, 'bench-'))
    const bench = (path: string) =>
      runToEnd([binary, 'bench', 'verify', '--generate', '20', '--runs', '1', '--json'], {
        cwd: folder,
        env: { PATH: path },
      })
    // npm's anvil, as `npm i -g @foundry-rs/anvil` puts it on the PATH: its wrapper beside the platform package.
    const run = await bench(join(root, 'node_modules/.bin'))
    expect(run.exitCode, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout) as { batched: { verdicts: object }; naive: { verdicts: object } }
    expect(report.batched.verdicts).toEqual({ ok: 20 })
    expect(report.naive.verdicts).toEqual({ ok: 20 })
    const missing = await bench(folder) // an empty folder: no anvil anywhere on the PATH
    expect(missing.exitCode).toBe(2)
    expect(missing.stderr).toBe(
      'agentmarket: bench verify --generate needs anvil, which was not found: install it with npm i -g @foundry-rs/anvil, or pass --rpc URL of an anvil you run\n',
    )
    expect(readdirSync(folder)).toEqual([])
  }, 300_000)
})
