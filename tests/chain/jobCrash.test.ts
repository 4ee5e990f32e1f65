import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { jobStepData } from '../../packages/core/src/payments/JobEscrow.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from '../support/anvil.ts'
import { type MigratedPostgres, startMigratedPostgres } from '../support/postgres.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-job-crash-'))
const TASKS = 12
let anvil: Anvil
let postgresServer: MigratedPostgres
let jobEscrow: Address
let buyer: HDAccount
let seller: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller } = chain.accounts)
  jobEscrow = (await anvil.deployJobEscrow()).address
  await anvil.approveUsdc(buyer, jobEscrow, 10n ** 12n)
  postgresServer = await startMigratedPostgres()
})
afterAll(async () => {
  anvil?.stop()
  await postgresServer?.stop()
  rmSync(folder, { recursive: true, force: true })
})

type Task = {
  task_id: string
  status: string
  money: string
  records: { kind: string }[]
  escrow_job: { key: Hex | null; calls: { step: string; to: Address; data: Hex }[] }
}

describe('crash: the job escrow follower under SIGKILL', () => {
  test('behavior: killed while it applies events, and while events happen, it resumes from its last block: every state change lands exactly once', async () => {
    const startBlock = await anvil.publicClient.getBlockNumber()
    const env = {
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      BASE_URL: 'https://jobs.market.test',
      CHAIN_RPC_URL: anvil.rpcUrl,
      CHAIN_ID: '8453',
      USDC_CONTRACT: USDC_ADDRESS,
      JOB_ESCROW_CONTRACT: jobEscrow,
      JOB_ESCROW_START_BLOCK: String(startBlock),
      MIN_CONFIRMATIONS: '1',
    }
    let server: MarketServer = await startMarketServer(env)
    const api = (path: string, init: { method?: string; body?: unknown; key?: string } = {}) =>
      fetch(`${server.base}${path}`, {
        method: init.method ?? 'GET',
        headers: {
          'content-type': 'application/json',
          ...(init.key && { authorization: `Bearer ${init.key}` }),
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      }).then((response) => response.json())
    /** Kills the server with SIGKILL (no shutdown of any kind), after `delayMs`. */
    const crash = async (delayMs: number) => {
      await Bun.sleep(delayMs)
      server.process.kill('SIGKILL')
      await server.process.exited
    }
    const registered = await api('/api/agents/register', {
      method: 'POST',
      body: {
        name: 'vendor',
        skills: [{ name: 'Essay', type: 'purchasable', price: 1, sla_seconds: 3600, review_seconds: 3600 }],
      },
    })
    await api('/api/agents/vendor', {
      method: 'PUT',
      key: registered.apiKey,
      body: { walletAddress: seller.address },
    })
    const tasks: Task[] = []
    // Each order names its buyer's wallet: the follower pays only a funding by the wallet the order named.
    for (let i = 0; i < TASKS; i++)
      tasks.push(
        await api('/api/agents/vendor/tasks', {
          method: 'POST',
          body: { skill: 'essay', buyer_wallet: buyer.address },
        }),
      )
    const read = (task: Task): Promise<Task> => api(`/api/agents/vendor/tasks/${task.task_id}`)
    /** Waits until every task reads as `done` says, restarting nothing. */
    const settled = async (done: (task: Task, index: number) => boolean) => {
      const deadline = Date.now() + 20_000
      while (Date.now() < deadline) {
        const now = await Promise.all(tasks.map(read))
        if (now.every(done)) return now
        await Bun.sleep(100)
      }
      throw new Error(
        `not settled: ${JSON.stringify((await Promise.all(tasks.map(read))).map((t) => t.status))}`,
      )
    }

    // 1. Fundings while the follower runs; killed a random moment into them.
    const funding = (async () => {
      for (const task of tasks) {
        const fund = task.escrow_job.calls.find((call) => call.step === 'fund')
        if (!fund) throw new Error('no fund call')
        await anvil.sendCall(buyer, fund)
      }
    })()
    await crash(200 + Math.random() * 800)
    await funding
    server = await startMarketServer(env)
    const funded = await settled((task) => task.status === 'paid' && task.money === 'held')
    const keys = funded.map((task) => task.escrow_job.key as Hex)

    // 2. Submissions, killed right after; then decisions made while the server is down.
    for (const key of keys)
      await anvil.sendCall(seller, {
        to: jobEscrow,
        data: jobStepData('submit', key, 'https://example.com/e'),
      })
    await crash(Math.random() * 600)
    for (const [index, key] of keys.entries())
      await anvil.sendCall(buyer, {
        to: jobEscrow,
        data: jobStepData(index % 2 === 0 ? 'complete' : 'reject', key, 'r'),
      })
    server = await startMarketServer(env)
    const final = await settled((task, index) => task.status === (index % 2 === 0 ? 'completed' : 'rejected'))

    // Every change once: no record twice, counts exact.
    for (const [index, task] of final.entries()) {
      expect(task.money).toBe(index % 2 === 0 ? 'released' : 'refunded')
      expect(task.records.map((record) => record.kind)).toEqual(index % 2 === 0 ? [] : ['dispute', 'refund'])
    }
    const profile = await api('/api/community/agents/vendor')
    expect(profile.deliveries).toEqual({
      completed: 6,
      onTime: 12,
      late: 0,
      onTimeRatio: 1,
      disputes: 6,
      refunds: 6,
    })
    const feed = await api('/api/feed/live?limit=200')
    const kinds = feed.events.map((event: { kind: string }) => event.kind)
    const count = (kind: string) => kinds.filter((k: string) => k === kind).length
    expect([
      count('task.paid'),
      count('task.delivered'),
      count('task.completed'),
      count('task.rejected'),
      count('task.refunded'),
    ]).toEqual([12, 12, 6, 6, 6])
    server.process.kill('SIGKILL')
  }, 300_000)

  test('behavior: two server processes on one PostgreSQL database follow the escrow together: each event lands once', async () => {
    const env = {
      DATABASE_URL: await postgresServer.freshUrl(),
      BASE_URL: 'https://jobs.market.test',
      CHAIN_RPC_URL: anvil.rpcUrl,
      CHAIN_ID: '8453',
      USDC_CONTRACT: USDC_ADDRESS,
      JOB_ESCROW_CONTRACT: jobEscrow,
      JOB_ESCROW_START_BLOCK: String(await anvil.publicClient.getBlockNumber()),
      MIN_CONFIRMATIONS: '1',
    }
    const nodes = [await startMarketServer(env), await startMarketServer(env)]
    try {
      const [first, second] = nodes as [MarketServer, MarketServer]
      const api = (
        server: MarketServer,
        path: string,
        init: { method?: string; body?: unknown; key?: string } = {},
      ) =>
        fetch(`${server.base}${path}`, {
          method: init.method ?? 'GET',
          headers: {
            'content-type': 'application/json',
            ...(init.key && { authorization: `Bearer ${init.key}` }),
          },
          body: init.body === undefined ? undefined : JSON.stringify(init.body),
        }).then((response) => response.json())
      const registered = await api(first, '/api/agents/register', {
        method: 'POST',
        body: {
          name: 'vendor',
          skills: [{ name: 'Essay', type: 'purchasable', price: 1, review_seconds: 60 }],
        },
      })
      await api(second, '/api/agents/vendor', {
        method: 'PUT',
        key: registered.apiKey,
        body: { walletAddress: seller.address },
      })
      const tasks: Task[] = []
      for (let i = 0; i < 8; i++)
        tasks.push(
          await api(nodes[i % 2] as MarketServer, '/api/agents/vendor/tasks', {
            method: 'POST',
            body: { skill: 'essay', buyer_wallet: buyer.address },
          }),
        )
      const settled = async (done: (task: Task) => boolean) => {
        const deadline = Date.now() + 20_000
        while (Date.now() < deadline) {
          const now: Task[] = await Promise.all(
            tasks.map((task) => api(first, `/api/agents/vendor/tasks/${task.task_id}`)),
          )
          if (now.every(done)) return now
          await Bun.sleep(100)
        }
        throw new Error('not settled')
      }
      for (const task of tasks) {
        const fund = task.escrow_job.calls.find((call) => call.step === 'fund')
        if (fund) await anvil.sendCall(buyer, fund)
      }
      const funded = await settled((task) => task.status === 'paid')
      for (const task of funded) {
        const key = task.escrow_job.key as Hex
        await anvil.sendCall(seller, { to: jobEscrow, data: jobStepData('submit', key, '') })
        await anvil.sendCall(buyer, { to: jobEscrow, data: jobStepData('complete', key, '') })
      }
      await settled((task) => task.status === 'completed' && task.money === 'released')
      const profile = await api(second, '/api/community/agents/vendor')
      expect(profile.deliveries).toMatchObject({ completed: 8, onTime: 8 })
      const kinds: string[] = (await api(second, '/api/feed/live?limit=200')).events.map(
        (event: { kind: string }) => event.kind,
      )
      expect(
        ['task.paid', 'task.delivered', 'task.completed'].map(
          (kind) => kinds.filter((k) => k === kind).length,
        ),
      ).toEqual([8, 8, 8])
    } finally {
      for (const node of nodes) node.process.kill('SIGKILL')
    }
  }, 300_000)
})
