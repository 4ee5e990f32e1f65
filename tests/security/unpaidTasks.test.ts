import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { viemChain } from '@agentmarket/core/viem'
import { type Hex, keccak256, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { expectProblem, jsonCaller } from '../support/examples.ts'
import { signPayerProof } from '../support/payer.ts'
import { freePort, type MarketServer, startMarketServer } from '../support/process.ts'

// Attack: hashes that are never mined, sent with orders, make the server read the chain for a day per order, and
// unpaid tasks pile up forever. Now unpaid tasks expire (UNPAID_TASK_TTL_SECONDS), a never-mined hash gets about
// 2.5 minutes of re-checks, and one client has at most 10 tasks re-checked in the background at once.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-unpaid-'))
let anvil: Anvil
let rpc: CountingRpc
let server: MarketServer
let call: ReturnType<typeof jsonCaller>
let buyer: HDAccount
let seller: HDAccount
let sellerKey = ''

/** A JSON-RPC proxy in front of anvil that counts receipt reads per transaction hash. */
type CountingRpc = { url: string; reads(hash: Hex): number; stop(): void }

function countingRpc(target: string): CountingRpc {
  const counts = new Map<string, number>()
  const server = Bun.serve({
    port: freePort(),
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      const parsed = JSON.parse(body) as
        | { method: string; params: unknown[] }
        | { method: string; params: unknown[] }[]
      for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
        if (message.method !== 'eth_getTransactionReceipt') continue
        const hash = String(message.params[0]).toLowerCase()
        counts.set(hash, (counts.get(hash) ?? 0) + 1)
      }
      const answer = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      return new Response(await answer.text(), { headers: { 'content-type': 'application/json' } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    reads: (hash) => counts.get(hash.toLowerCase()) ?? 0,
    stop: () => server.stop(true),
  }
}

const neverMined = (label: string) => keccak256(toHex(`${label}-${Math.random()}`))
const anySignature = `0x${'ab'.repeat(65)}`

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
  anvil = chain.anvil
  ;({ buyer, seller } = chain.accounts)
  rpc = countingRpc(anvil.rpcUrl)
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: rpc.url,
    TRUST_PROXY: '1',
    UNPAID_TASK_TTL_SECONDS: '3',
  })
  call = jsonCaller(server.base)
  const registered = await call('POST', '/api/agents/register', {
    body: { name: 'slow-seller', skills: [{ name: 'Report', type: 'purchasable', price: '1' }] },
  })
  sellerKey = registered.json.apiKey
  await call('PUT', '/api/agents/slow-seller', { key: sellerKey, body: { walletAddress: seller.address } })
})

afterAll(() => {
  server?.stop()
  rpc?.stop()
  anvil?.stop()
  rmSync(folder, { recursive: true, force: true })
})

const orderFrom = (address: string, extra: Record<string, unknown> = {}) =>
  call('POST', '/api/agents/slow-seller/tasks', {
    body: { skill: 'report', ...extra },
    headers: { 'x-forwarded-for': address },
  })

describe('unpaid tasks expire (bun start, UNPAID_TASK_TTL_SECONDS=3)', () => {
  test('behavior: an unpaid task shows expires_at, turns expired, cannot be paid after, and is listed as expired', async () => {
    const created = await orderFrom('192.0.2.1')
    expect(created.status).toBe(201)
    const path = `/api/agents/slow-seller/tasks/${created.json.task_id}`
    const expiresAt = Date.parse(created.json.expires_at)
    expect(expiresAt - Date.parse(created.json.created_at)).toBe(3_000)
    expect(created.json.next_steps.pay).toContain(created.json.expires_at)

    const hash = await anvil.transferUsdc(buyer, seller.address, 1_000_000n)
    await anvil.mine(2)
    await Bun.sleep(Math.max(0, expiresAt - Date.now()) + 200)
    const read = await call('GET', path)
    expect(read.json.status).toBe('expired')
    expect(read.json.payment.payer_proof).toBeNull()
    const late = await call('POST', `${path}/verify-payment`, {
      body: {
        tx_hash: hash,
        payer_signature: await signPayerProof(buyer, created.json.payment.payer_proof, hash),
      },
    })
    // Read before expectProblem: Bun's toMatchObject leaves its matchers in the object it checked.
    expect(late.json.detail).toContain('order again')
    expectProblem(late, 409, 'task_expired')
    expect((await call('GET', path)).json.payment.tx_hash).toBeNull()
    // The sweep stores the state within 10 s; the seller's queue then filters by it.
    const deadline = Date.now() + 15_000
    let listed = 0
    while (Date.now() < deadline && listed === 0) {
      listed = (await call('GET', '/api/agents/slow-seller/tasks?status=expired', { key: sellerKey })).json
        .total
      if (listed === 0) await Bun.sleep(250)
    }
    expect(listed).toBeGreaterThanOrEqual(1)
  }, 300_000)
})

describe('background re-checks have a budget per client', () => {
  test('attack: one client sending never-mined hashes gets at most 10 re-checked; the 11th is answered but not re-checked, another client still is', async () => {
    const hashes = Array.from({ length: 11 }, (_, index) => neverMined(`flood-${index}`))
    const answers = []
    for (const hash of hashes)
      answers.push(await orderFrom('198.51.100.9', { tx_hash: hash, payer_signature: anySignature }))
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 11 }, () => 202))
    expect(answers.map((answer) => answer.json.verification.rechecked)).toEqual([
      ...Array.from({ length: 10 }, () => true),
      false,
    ])
    const other = await orderFrom('198.51.100.200', {
      tx_hash: neverMined('other'),
      payer_signature: anySignature,
    })
    expect(other.json.verification.rechecked).toBe(true)

    // The first re-check is due 5 s after the order; the server passes every second.
    await Bun.sleep(6_500)
    const last = hashes[10] as Hex
    expect(rpc.reads(hashes[0] as Hex)).toBeGreaterThanOrEqual(2)
    expect(rpc.reads(last)).toBe(1)
  }, 300_000)

  test('attack: rotating the low bits of one IPv6 /64 is one client: its 11th never-mined hash is not re-checked', async () => {
    const addresses = Array.from({ length: 11 }, (_, index) => `2001:db8:1:2::${(index + 1).toString(16)}`)
    const rechecked = []
    for (const address of addresses) {
      const answer = await orderFrom(address, { tx_hash: neverMined(address), payer_signature: anySignature })
      rechecked.push(answer.json.verification.rechecked)
    }
    expect(rechecked).toEqual([...Array.from({ length: 10 }, () => true), false])
    const elsewhere = await orderFrom('2001:db8:1:3::1', {
      tx_hash: neverMined('another /64'),
      payer_signature: anySignature,
    })
    expect(elsewhere.json.verification.rechecked).toBe(true)
  })
})

describe('a hash the chain never shows mined gets minutes of re-checks, not a day (re-check loop, real chain)', () => {
  test('attack: a transaction mined but never confirmed enough is re-checked at most 12 times (about 40 minutes), then dropped', async () => {
    // MIN_CONFIRMATIONS far above what the chain will show: the payment stays "pending" with confirmations >= 1.
    const app = await testApp('2026-06-01T12:00:00.000Z', {
      chain: viemChain({ rpcUrl: rpc.url }),
      chainConfig: { minConfirmations: 1_000_000 },
    })
    const registered = await app.register('patient-seller', {
      skills: [{ name: 'Report', type: 'purchasable', price: '1' }],
    })
    await app.call('PUT', '/api/agents/patient-seller', {
      key: registered.key,
      body: { walletAddress: seller.address },
    })
    const hash = await anvil.transferUsdc(buyer, seller.address, 1_000_000n)
    const created = await app.call('POST', '/api/agents/patient-seller/tasks', {
      body: { skill: 'report', tx_hash: hash, payer_signature: anySignature },
    })
    expect(created.status).toBe(202)
    expect(created.json.verification.rechecked).toBe(true)
    const atOrder = rpc.reads(hash)
    // Four simulated hours, a pass a minute: the back-off (5 s doubling to 5 min) spends 12 re-checks in ~35 minutes.
    for (let pass = 0; pass < 240; pass++) {
      app.clock.advance(60_000)
      await app.market.recheckPendingPayments()
    }
    expect(rpc.reads(hash) - atOrder).toBe(12)
    const task = await app.call('GET', `/api/agents/patient-seller/tasks/${created.json.task_id}`)
    expect(task.json.status).toBe('pending_payment')
  }, 300_000)

  test('attack: after 5 re-checks (about 2.5 minutes) the check is dropped; the task stays pending and can still be verified', async () => {
    const app = await testApp('2026-06-01T12:00:00.000Z', { chain: viemChain({ rpcUrl: rpc.url }) })
    const registered = await app.register('budget-seller', {
      skills: [{ name: 'Report', type: 'purchasable', price: '1' }],
    })
    await app.call('PUT', '/api/agents/budget-seller', {
      key: registered.key,
      body: { walletAddress: seller.address },
    })
    const hash = neverMined('budget')
    const created = await app.call('POST', '/api/agents/budget-seller/tasks', {
      body: { skill: 'report', tx_hash: hash, payer_signature: anySignature },
    })
    expect(created.status).toBe(202)
    let elapsed = 0
    for (let pass = 0; pass < 40; pass++) {
      app.clock.advance(10_000)
      elapsed += 10_000
      await app.market.recheckPendingPayments()
    }
    // 1 read at order time, then 5 re-checks (5, 10, 20, 40 and 80 s apart), then none in the 400 s simulated.
    expect(rpc.reads(hash)).toBe(6)
    expect(elapsed).toBe(400_000)
    const task = await app.call('GET', `/api/agents/budget-seller/tasks/${created.json.task_id}`)
    expect(task.json.status).toBe('pending_payment')
    expectProblemShape(
      await app.call('POST', `/api/agents/budget-seller/tasks/${created.json.task_id}/verify-payment`, {
        body: { tx_hash: hash },
      }),
      400,
      'payer_signature_required',
    )
  })
})
