import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { payerProofTypedData } from '@agentmarket/core'
import type { Hex } from 'viem'
import { startAnvil, USDC_ADDRESS } from './support/anvil.ts'
import {
  type ChaosNode,
  chaosLine,
  chaosNode,
  faultyLink,
  type LedgerVerdict,
  type LoadTally,
  ledgerVerdict,
  loadAgents,
  steadyLoad,
} from './support/chaos.ts'
import { startMigratedPostgres } from './support/postgres.ts'
import { freePort } from './support/process.ts'
import { sharedPostgres } from './support/sharedDatabase.ts'
import { fillDisk, mountSmallDisk } from './support/smallDisk.ts'
import { captureRelay, sendMail } from './support/smtp.ts'

// The compact chaos suite: each fault once, under a steady write load, judged by the ledger (0 acknowledged writes
// lost, 0 duplicated, no 5xx but the 503/507 refusals). Times are figures printed beside the verdict, never verdicts:
// `bun scripts/chaos.ts` runs the same faults many times and prints the recovery times kept in docs/reliability.md.
// Every wait is on a condition (so many acknowledgements, a node's health); the bounds only turn a hang into a failure.
setDefaultTimeout(600_000)
/** How many times each fault is repeated within its load: 1 in CI; `bun scripts/chaos.ts --rounds N` sets more. */
const ROUNDS = Math.max(1, Number(process.env.CHAOS_ROUNDS ?? 1))

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-chaos-'))
const running: ChaosNode[] = []
const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const node of running) node.stop()
  for (const cleanup of cleanups) await cleanup()
  rmSync(folder, { recursive: true, force: true })
})

/** Starts a node and remembers it for the end of the run. */
async function node(env: Record<string, string>): Promise<ChaosNode> {
  const started = await chaosNode(env)
  running.push(started)
  return started
}

/** A PostgreSQL server of the test's own and three nodes on one database of it. */
async function threeNodesOnPostgres() {
  const postgres = await startMigratedPostgres()
  cleanups.push(() => postgres.stop())
  const database = await sharedPostgres(postgres)
  await database.close()
  const nodes: ChaosNode[] = []
  for (let index = 0; index < 3; index++) nodes.push(await node({ DATABASE_URL: database.url }))
  return { postgres, nodes }
}

/** The verdict every fault must meet. */
function expectClean(fault: string, tally: LoadTally, verdict: LedgerVerdict, recoveryMs?: number) {
  console.log(chaosLine(fault, tally, verdict, recoveryMs))
  expect({ ...verdict, unexpected5xx: tally.unexpected5xx }).toEqual({
    lost: 0,
    duplicated: 0,
    unexpected5xx: 0,
  })
  expect(tally.acknowledged).toBe(tally.sent)
}

/**
 * SIGKILLs `victim` once 40 writes were acknowledged, restarts it, and waits for 40 more, ROUNDS times; the slowest
 * time from the restart to the 40 acknowledgements after it.
 */
async function killAndRestart(victim: ChaosNode, load: ReturnType<typeof steadyLoad>) {
  let slowest = 0
  for (let round = 0; round < ROUNDS; round++) {
    await load.acknowledgedMore(40)
    await victim.kill()
    const restarted = performance.now()
    await victim.restart()
    await load.acknowledgedMore(40)
    slowest = Math.max(slowest, performance.now() - restarted)
  }
  return slowest
}

describe('chaos (compact): faults under a steady write load', () => {
  test('attack: a libSQL node SIGKILLed under load and started again loses and duplicates nothing', async () => {
    const victim = await node({ DATABASE_URL: `file:${join(folder, 'killed.db')}` })
    const agents = await loadAgents(victim.base, 'kill', 4)
    const load = steadyLoad({ targets: () => [victim.base], agents, perSecond: 20, label: 'kill' })
    const recoveryMs = await killAndRestart(victim, load)
    const tally = await load.stop()
    expectClean('libSQL node SIGKILL', tally, await ledgerVerdict(victim.base, tally.writes), recoveryMs)
  })

  test('attack: one of three nodes on PostgreSQL SIGKILLed under load: the others serve, nothing lost or duplicated', async () => {
    const { nodes } = await threeNodesOnPostgres()
    const [survivor, , victim] = nodes as [ChaosNode, ChaosNode, ChaosNode]
    const agents = await loadAgents(survivor.base, 'nodes', 6)
    const load = steadyLoad({
      targets: () => nodes.map((n) => n.base),
      agents,
      perSecond: 30,
      label: 'nodes',
    })
    const recoveryMs = await killAndRestart(victim, load)
    const tally = await load.stop()
    expectClean(
      'PostgreSQL node SIGKILL',
      tally,
      await ledgerVerdict(survivor.base, tally.writes),
      recoveryMs,
    )
  })

  test('attack: PostgreSQL restarted under load with three nodes: every node survives and serves again; nothing lost or duplicated', async () => {
    const { postgres, nodes } = await threeNodesOnPostgres()
    const agents = await loadAgents((nodes[0] as ChaosNode).base, 'restart', 6)
    const load = steadyLoad({
      targets: () => nodes.map((n) => n.base),
      agents,
      perSecond: 30,
      label: 'restart',
    })
    let slowest = 0
    for (let round = 0; round < ROUNDS; round++) {
      await load.acknowledgedMore(40)
      await postgres.halt()
      await load.seen('503', 10 * (round + 1))
      await postgres.resume()
      const resumed = performance.now()
      await load.acknowledgedMore(40)
      slowest = Math.max(slowest, performance.now() - resumed)
    }
    const tally = await load.stop()
    expect(nodes.map((n) => n.alive())).toEqual([true, true, true])
    expectClean(
      'PostgreSQL restart',
      tally,
      await ledgerVerdict((nodes[0] as ChaosNode).base, tally.writes),
      slowest,
    )
  })

  const disk = mountSmallDisk('16m')
  test.skipIf('refused' in disk)(
    'attack: the libSQL disk full under load: writes answer 507 and resume once space is freed; nothing lost or duplicated',
    async () => {
      if (!('path' in disk)) return
      cleanups.push(() => {
        Bun.spawnSync(['umount', disk.path])
        rmSync(disk.path, { recursive: true, force: true })
      })
      const server = await node({ DATABASE_URL: `file:${join(disk.path, 'market.db')}` })
      const agents = await loadAgents(server.base, 'disk', 3)
      const load = steadyLoad({ targets: () => [server.base], agents, perSecond: 20, label: 'disk' })
      let slowest = 0
      for (let round = 0; round < ROUNDS; round++) {
        await load.acknowledgedMore(20)
        const filler = fillDisk(disk.path)
        await load.seen('507', 10 * (round + 1))
        unlinkSync(filler)
        const freed = performance.now()
        await load.acknowledgedMore(20)
        slowest = Math.max(slowest, performance.now() - freed)
      }
      const tally = await load.stop()
      expectClean('libSQL disk full', tally, await ledgerVerdict(server.base, tally.writes), slowest)
    },
  )

  test('attack: the outgoing SMTP relay down under load: every order mail is answered once when it returns', async () => {
    const relay = await captureRelay(freePort())
    cleanups.push(() => relay.stop())
    const smtpPort = freePort()
    const mailbox = 'orders@chaos.test'
    const server = await node({
      DATABASE_URL: `file:${join(folder, 'mail.db')}`,
      ORDER_MAILBOX: mailbox,
      SMTP_INBOUND_PORT: String(smtpPort),
      SMTP_OUTBOUND_URL: relay.url,
      MAIL_AUTH: 'off',
    })
    const seller = await fetch(`${server.base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'mailseller', skills: ['Ping'] }),
    })
    expect(seller.status).toBe(200)
    const agents = await loadAgents(server.base, 'mail', 3)
    const load = steadyLoad({ targets: () => [server.base], agents, perSecond: 20, label: 'mail' })
    const orders: string[] = []
    let recoveryMs = 0
    for (let round = 0; round < ROUNDS; round++) {
      await load.acknowledgedMore(20)
      await relay.stop()
      const sent = Array.from({ length: 8 }, (_, index) => `<chaos-order-${round}-${index}@buyer.test>`)
      orders.push(...sent)
      for (const messageId of sent)
        await sendMail(smtpPort, {
          from: 'Ann Buyer <ann@buyer.test>',
          to: mailbox,
          subject: 'Ping',
          text: '{}',
          messageId,
        })
      await load.acknowledgedMore(20)
      await relay.start()
      const returned = performance.now()
      for (const messageId of sent) await relay.waitFor((email) => email.inReplyTo === messageId, 120_000)
      recoveryMs = Math.max(recoveryMs, performance.now() - returned)
    }
    const tally = await load.stop()
    expectClean('SMTP relay down', tally, await ledgerVerdict(server.base, tally.writes), recoveryMs)
    const replies = relay.messages.filter(({ email }) => orders.includes(email.inReplyTo ?? ''))
    console.log(`chaos SMTP relay down: ${orders.length} orders, ${replies.length} replies`)
    expect(replies).toHaveLength(orders.length)
  })

  test('attack: the chain RPC frozen, then down, under load: verify-payment answers 503 chain_unavailable, then pays each task once', async () => {
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    await anvil.installUsdc()
    const link = await faultyLink(Number(new URL(anvil.rpcUrl).port), freePort())
    cleanups.push(() => link.stop())
    const market = 'https://chaos.market.test'
    const server = await node({
      DATABASE_URL: `file:${join(folder, 'chain.db')}`,
      CHAIN_RPC_URL: `http://127.0.0.1:${link.port}`,
      CHAIN_ID: '8453',
      USDC_CONTRACT: USDC_ADDRESS,
      MIN_CONFIRMATIONS: '1',
      BASE_URL: market,
    })
    const [sellerWallet, buyer] = [anvil.accounts[1], anvil.accounts[3]]
    if (!sellerWallet || !buyer) throw new Error('no anvil accounts')
    const call = async (method: string, path: string, body: unknown, key?: string) => {
      const response = await fetch(`${server.base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      })
      return { status: response.status, json: (await response.json()) as Record<string, unknown> }
    }
    const skills = [{ name: 'Deep Search', type: 'purchasable', price: '1' }]
    const seller = await call('POST', '/api/agents/register', { name: 'chainseller', skills })
    const sellerKey = String(seller.json.apiKey)
    await call('PUT', '/api/agents/chainseller', { walletAddress: sellerWallet.address }, sellerKey)
    await anvil.mintUsdc(buyer.address, BigInt(2 * ROUNDS) * 1_000_000n)
    const agents = await loadAgents(server.base, 'chain', 3)
    const load = steadyLoad({ targets: () => [server.base], agents, perSecond: 20, label: 'chain' })
    await load.acknowledgedMore(20)

    /** Orders the skill, pays it on chain, and verifies with the RPC in `fault`, then with it back. */
    const payThrough = async (fault: 'freeze' | 'down') => {
      const order = await call('POST', '/api/agents/chainseller/tasks', { skill: 'deep-search' })
      expect(order.status).toBe(201)
      const task = String(order.json.task_id)
      const hash: Hex = await anvil.transferUsdc(buyer, sellerWallet.address, 1_000_000n)
      const proof = payerProofTypedData(8453, { market, agent: 'chainseller', task, txHash: hash })
      const signature = await buyer.signTypedData({ ...proof, message: { ...proof.message, txHash: hash } })
      const body = { tx_hash: hash, payer_signature: signature }
      const verify = `/api/agents/chainseller/tasks/${task}/verify-payment`
      await link.set(fault)
      const refused = await call('POST', verify, body)
      await link.set('pass')
      const paid = await call('POST', verify, body)
      return { refused, paid, hash }
    }
    const rounds: Awaited<ReturnType<typeof payThrough>>[] = []
    for (let round = 0; round < ROUNDS; round++)
      rounds.push(await payThrough('freeze'), await payThrough('down'))
    await load.acknowledgedMore(20)
    const tally = await load.stop()
    expectClean('chain RPC frozen and down', tally, await ledgerVerdict(server.base, tally.writes))
    for (const { refused, paid, hash } of rounds) {
      expect(refused).toMatchObject({ status: 503, json: { code: 'chain_unavailable' } })
      expect(paid.status).toBe(200)
      expect(paid.json).toMatchObject({
        verified: true,
        task: { status: 'paid', payment: { tx_hash: hash } },
      })
    }
    // Charged once per order: the buyer paid one transfer per task, and nothing asked for another.
    expect(await anvil.usdcOf(buyer.address)).toBe(0n)
    const tasks = await call('GET', '/api/agents/chainseller/tasks?status=all', undefined, sellerKey)
    console.log(
      `chaos chain RPC: ${rounds.length} verifications refused 503 during the fault, then paid once each`,
    )
    expect(tasks.json.total).toBe(rounds.length)
  })
})
