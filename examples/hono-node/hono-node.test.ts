import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { ensurePackagesBuilt, expectProblem, jsonCaller } from '../../tests/support/examples.ts'
import { freePort, readUntil, runToEnd, waitForOk } from '../../tests/support/process.ts'

const root = resolve(import.meta.dir, '../..')
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-hono-node-'))
const port = freePort()
const base = `http://127.0.0.1:${port}`
const wallet = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'
/** The same wallet as the core shows it: EIP-55 checksummed. */
const checksummed = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
let server: Subprocess<'ignore', 'pipe', 'inherit'>
let startupLine = ''
const call = jsonCaller(base)

/** Starts `node examples/hono-node/server.js` on the test database, as a user would, and waits for it. */
async function startServer() {
  const child = Bun.spawn(['node', 'examples/hono-node/server.js'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PORT: String(port),
      DATABASE_URL: `file:${join(folder, 'data/market.db')}`,
    },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  await waitForOk(`${base}/health`, child)
  startupLine = (await readUntil(child.stdout, (text) => text.includes('\n'))).trim()
  return child
}

/** Stops the server with SIGTERM and checks it exits cleanly. */
async function stopServer() {
  server.kill('SIGTERM')
  expect(await server.exited).toBe(0)
}

/** Registers an agent selling a free `ping` and a paid `deep-research`, and returns its key. */
async function register(name: string): Promise<string> {
  const skills = ['ping', { name: 'Deep Research', type: 'purchasable', price: 0.01, sla: '24 hours' }]
  const registered = await call('POST', '/api/agents/register', { body: { name, skills } })
  expect(registered.status).toBe(200)
  return registered.json.apiKey
}

beforeAll(async () => {
  await ensurePackagesBuilt()
  server = await startServer()
}, 300_000)

afterAll(() => {
  server?.kill()
  rmSync(folder, { recursive: true, force: true })
})

describe('examples/hono-node', () => {
  test('behavior: the server runs under the real node binary, not Bun', async () => {
    const node = await runToEnd(['node', '--version'])
    expect(startupLine).toBe(
      `hono-node: listening on http://localhost:${port} (Node.js ${node.stdout.trim()})`,
    )
    expect(node.stdout.trim()).not.toBe(process.version)
  })

  test('behavior: an agent registers (its key shown once), heartbeats live and sets its wallet', async () => {
    const registered = await call('POST', '/api/agents/register', {
      body: { name: 'scout', skills: ['ping'] },
    })
    expect(registered.status).toBe(200)
    const key = registered.json.apiKey
    expect(key).toMatch(/^amk_/)
    expect(registered.json).toMatchObject({ agentId: 'scout', status: 'free' })
    const beat = await call('POST', '/api/agents/scout/heartbeat', { key })
    expect(beat.status).toBe(200)
    expect(beat.json).toMatchObject({ status: 'live', agent: 'scout' })
    const updated = await call('PUT', '/api/agents/scout', { key, body: { walletAddress: wallet } })
    expect(updated.status).toBe(200)
    expect(updated.json.walletAddress).toBe(checksummed)
    const agent = await call('GET', '/api/community/agents/scout')
    expect(agent.status).toBe(200)
    expect(agent.json).toMatchObject({ name: 'scout', heartbeat: { status: 'live' } })
    expect(JSON.stringify(agent.json)).not.toContain(key)
  })

  test('behavior: an order of a paid skill is 201 pending_payment to the seller wallet, and readable by its id', async () => {
    const key = await register('seller')
    await call('PUT', '/api/agents/seller', { key, body: { walletAddress: wallet } })
    const created = await call('POST', '/api/agents/seller/tasks', { body: { skill: 'deep-research' } })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ status: 'pending_payment', skill_slug: 'deep-research' })
    expect(created.json.payment).toMatchObject({ amount: 0.01, currency: 'USDC', to: checksummed })
    const read = await call('GET', `/api/agents/seller/tasks/${created.json.task_id}`)
    expect(read.status).toBe(200)
    expect(read.json).toMatchObject({ task_id: created.json.task_id, status: 'pending_payment' })
  })

  test('behavior: an order of a free skill starts paid and the seller completes it with a result URL', async () => {
    const key = await register('helper')
    const created = await call('POST', '/api/agents/helper/tasks', { body: { skill: 'ping' } })
    expect(created.status).toBe(201)
    expect(created.json.status).toBe('paid')
    const path = `/api/agents/helper/tasks/${created.json.task_id}`
    const completed = await call('POST', `${path}/complete`, {
      key,
      body: { result_url: 'https://results.example/1' },
    })
    expect(completed.status).toBe(200)
    expect(completed.json).toMatchObject({ status: 'completed', result_url: 'https://results.example/1' })
    expect((await call('GET', path)).json.status).toBe('completed')
  })

  test('error: a body that is not JSON is a 400 problem', async () => {
    expectProblem(await call('POST', '/api/agents/register', { raw: '{"name": ' }), 400, 'invalid_json')
  })

  test('error: a missing key is a 401 problem with a Bearer challenge', async () => {
    await register('keyless')
    const answer = await call('POST', '/api/agents/keyless/heartbeat')
    expectProblem(answer, 401, 'unauthorized')
    expect(answer.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  test("error: another agent's key is a 403 problem", async () => {
    await register('victim')
    const other = await register('intruder')
    expectProblem(await call('POST', '/api/agents/victim/heartbeat', { key: other }), 403, 'forbidden')
  })

  test('error: an unknown agent, task or route is a 404 problem', async () => {
    expectProblem(await call('GET', '/api/community/agents/nobody'), 404, 'agent_not_found')
    await register('lonely')
    expectProblem(await call('GET', '/api/agents/lonely/tasks/task_nope'), 404, 'task_not_found')
    expectProblem(await call('GET', '/api/no/such/route'), 404, 'not_found')
  })

  test('behavior: after a restart on the same database file the agent and its tasks are still there', async () => {
    const key = await register('durable')
    const created = await call('POST', '/api/agents/durable/tasks', { body: { skill: 'ping' } })
    await stopServer()
    server = await startServer()
    const agent = await call('GET', '/api/community/agents/durable')
    expect(agent.status).toBe(200)
    const task = await call('GET', `/api/agents/durable/tasks/${created.json.task_id}`)
    expect(task.json).toMatchObject({ status: 'paid', skill_slug: 'ping' })
    expect((await call('POST', '/api/agents/durable/heartbeat', { key })).status).toBe(200)
  })
})
