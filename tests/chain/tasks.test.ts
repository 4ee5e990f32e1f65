import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, type Hex, keccak256, parseAbi, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import artifacts from '../../packages/server/src/contracts/artifacts.json'
import { startPaymentRechecks } from '../../packages/server/src/rechecks.ts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { type ServedPayerProof, signPayerProof } from '../support/payer.ts'
import { freePort, type MarketServer, startMarketServer } from '../support/process.ts'

const PRICE = 2_500_000n // 2.5 USDC
/** The markets' clock. */
const MARKET_START = '2026-06-01T12:00:00.000Z'
const OTHER_TOKEN: Address = '0x00000000000000000000000000000000000070ce'
const TOKEN_ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function transfer(address to, uint256 amount) returns (bool)',
])

let anvil: Anvil
let escrow: Address
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount
let secondBuyer: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger', 'secondBuyer'], {
    escrow: true,
    funded: ['buyer', 'secondBuyer'],
  })
  ;({ anvil, escrow } = chain)
  ;({ buyer, seller, stranger, secondBuyer } = chain.accounts)
  await anvil.testClient.setCode({
    address: OTHER_TOKEN,
    bytecode: artifacts.MockUSDC.deployedBytecode as Hex,
  })
})

afterAll(() => anvil?.stop())

/** An app on the anvil chain (optionally with the escrow on) with a seller selling a 2.5 USDC skill. */
async function market(options: { escrow?: boolean; rpcUrl?: string } = {}) {
  const app = await testApp(MARKET_START, {
    chain: viemChain({ rpcUrl: options.rpcUrl ?? anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { escrowContract: options.escrow ? escrow : null },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5' }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  /** Orders the paid skill (with `tx_hash`: signed by `payer` as the agent card asks); returns its path and body. */
  const order = async (extra: Record<string, unknown> = {}, payer: HDAccount = buyer) => {
    const card = (await app.call('GET', '/api/agents/seller/agent-card.json')).json
    const proof = card._extensions.commerce.payer_proof
    const signed =
      typeof extra.tx_hash === 'string' && !('payer_signature' in extra)
        ? { payer_signature: await signPayerProof(payer, proof, extra.tx_hash as Hex) }
        : {}
    const created = await app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'deep-search', ...extra, ...signed },
    })
    return { path: `/api/agents/seller/tasks/${created.json.task_id}`, created }
  }
  /** Verifies `txHash` for the task at `path`, signed by `payer` as the task's payment.payer_proof asks. */
  const verify = async (path: string, txHash: Hex, payer: HDAccount = buyer) => {
    const task = (await app.call('GET', path)).json
    const proof = task.payment.payer_proof
    const body = proof
      ? { tx_hash: txHash, payer_signature: await signPayerProof(payer, proof, txHash) }
      : { tx_hash: txHash, payer_signature: `0x${'1'.repeat(130)}` }
    return app.call('POST', `${path}/verify-payment`, { body })
  }
  return { ...app, order, verify }
}

/** Sends `amount` of the token at OTHER_TOKEN, a USDC look-alike at another address. */
async function transferOtherToken(from: HDAccount, to: Address, amount: bigint): Promise<Hex> {
  const wallet = anvil.walletFor(from)
  const mint = await wallet.writeContract({
    address: OTHER_TOKEN,
    abi: TOKEN_ABI,
    functionName: 'mint',
    args: [from.address, amount],
  })
  await anvil.publicClient.waitForTransactionReceipt({ hash: mint, pollingInterval: 5 })
  const hash = await wallet.writeContract({
    address: OTHER_TOKEN,
    abi: TOKEN_ABI,
    functionName: 'transfer',
    args: [to, amount],
  })
  await anvil.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 5 })
  return hash
}

/** A fresh on-chain task id for an escrow deposit. */
const depositId = (label: string) => keccak256(toHex(`${label}-${Math.random()}`))

describe('card-and-verify on a real chain', () => {
  test('behavior: one confirmation answers 202 and changes nothing; two blocks later it is paid', async () => {
    const { order, verify, call } = await market()
    const { path } = await order()
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)

    const early = await verify(path, hash)
    expect(early.status).toBe(202)
    expect(early.json).toEqual({
      verified: false,
      state: 'pending',
      confirmations: 1,
      required: 3,
      rechecked: true,
    })
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await call('GET', path)).json.status).toBe('pending_payment')

    await anvil.mine(2)
    const paid = await verify(path, hash)
    expect(paid.status).toBe(200)
    expect(paid.json.verified).toBe(true)
    expect(paid.json.task).toMatchObject({
      status: 'paid',
      payment: { method: 'transfer', tx_hash: hash, paid_amount: 2.5, from: buyer.address },
    })
    expect((await call('GET', path)).json.status).toBe('paid')
    // The same hash again (a retry whose 200 was lost) gets the same 200; it changes nothing.
    const again = await verify(path, hash)
    expect([again.status, again.json]).toEqual([200, paid.json])
    const feed = (await call('GET', '/api/feed/live')).json.events
    expect(feed[0]).toMatchObject({ kind: 'task.paid', task: { tx_hash: hash } })
  })

  test('behavior: a hash the chain does not know yet is pending with 0 confirmations', async () => {
    const { order, verify } = await market()
    const { path } = await order()
    const unknown = await verify(path, keccak256(toHex(`never sent ${Math.random()}`)))
    expect(unknown.status).toBe(202)
    expect(unknown.json).toMatchObject({ confirmations: 0, required: 3 })
  })

  test('error: wrong payments are 422 with the reason, and the task stays pending', async () => {
    const { order, verify, call } = await market()
    const reverted = await anvil.sendRevertingTransfer(stranger, seller.address, PRICE)
    const otherToken = await transferOtherToken(buyer, seller.address, PRICE)
    const elsewhere = await anvil.transferUsdc(buyer, stranger.address, PRICE)
    const short = await anvil.transferUsdc(buyer, seller.address, PRICE - 1n)
    const fromSomeoneElse = await anvil.transferUsdc(secondBuyer, seller.address, PRICE)
    await anvil.mine(3)
    const cases: [Hex, string, Record<string, unknown>][] = [
      [reverted, 'reverted', {}],
      [otherToken, 'wrong_token', {}],
      [elsewhere, 'wrong_recipient', {}],
      [short, 'amount_mismatch', {}],
      [fromSomeoneElse, 'wrong_sender', { buyer_wallet: buyer.address }],
    ]
    for (const [hash, reason, extra] of cases) {
      const { path } = await order(extra)
      const refused = await verify(path, hash, reason === 'wrong_sender' ? secondBuyer : buyer)
      expectProblemShape(refused, 422, reason)
      expect((await call('GET', path)).json.status).toBe('pending_payment')
    }
  })

  test('error: a hash that paid one task is refused for another (409 tx_already_used)', async () => {
    const { order, verify, call } = await market()
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    await anvil.mine(2)
    const first = await order()
    const second = await order()
    expect((await verify(first.path, hash)).status).toBe(200)
    expectProblemShape(await verify(second.path, hash), 409, 'tx_already_used')
    expectProblemShape(await order({ tx_hash: hash }).then(({ created }) => created), 409, 'tx_already_used')
    expect((await call('GET', second.path)).json.status).toBe('pending_payment')
  })

  test('behavior: a tx_hash sent with the order that is already final creates the task paid', async () => {
    const { order } = await market()
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    await anvil.mine(2)
    const { created } = await order({ tx_hash: hash, buyer_wallet: buyer.address })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ status: 'paid', payment: { tx_hash: hash } })
  })

  test('behavior: 20 concurrent verifies of one payment give exactly one 200', async () => {
    const { order, verify } = await market()
    const { path } = await order()
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    await anvil.mine(2)
    const answers = await Promise.all(Array.from({ length: 20 }, () => verify(path, hash)))
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(19)
  })

  test('error: an unreachable RPC answers 503 with Retry-After; the task stays unpaid, its hash kept for the re-check (pay nothing more)', async () => {
    const { order, verify, call } = await market({ rpcUrl: `http://127.0.0.1:${freePort()}` })
    const { path, created } = await order()
    const hash: Hex = `0x${'c'.repeat(64)}`
    const answer = await verify(path, hash)
    expectProblemShape(answer, 503, 'chain_unavailable')
    expect(answer.headers.get('retry-after')).toBeTruthy()
    const after = (await call('GET', path)).json
    expect({ ...after, next_steps: null }).toEqual({ ...created.json, next_steps: null })
    expect(after.next_steps.pay).toContain(hash)
    expect(after.next_steps.pay).toContain('do not pay again')
    const withHash = await order({ tx_hash: `0x${'d'.repeat(64)}` })
    expectProblemShape(withHash.created, 503, 'chain_unavailable')
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(1)
  })

  test('behavior: the background re-check pays a task sent with a not-yet-final hash, without a second call', async () => {
    const { order, call, market: actions, clock } = await market()
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    const { created, path } = await order({ tx_hash: hash })
    expect(created.status).toBe(202)
    expect(created.json).toMatchObject({
      status: 'pending_payment',
      verification: { verified: false, state: 'pending', confirmations: 1, required: 3, rechecked: true },
    })
    const rechecks = startPaymentRechecks(actions, { intervalMs: 10 })
    try {
      await anvil.mine(2)
      clock.advance(5_000)
      const deadline = Date.now() + 5_000
      while ((await call('GET', path)).json.status !== 'paid' && Date.now() < deadline) await Bun.sleep(20)
      expect((await call('GET', path)).json).toMatchObject({ status: 'paid', payment: { tx_hash: hash } })
    } finally {
      await rechecks.stop()
    }
  })
})

describe('escrow-first on a real chain', () => {
  /** Approves and deposits `amount` for `sellerAddress` from `from`; returns the deposit's hash, final. */
  async function depositFor(from: HDAccount, sellerAddress: Address, taskId: Hex, amount = PRICE) {
    await anvil.approveUsdc(from, escrow, amount)
    const hash = await anvil.deposit(from, escrow, {
      taskId,
      seller: sellerAddress,
      amount,
      // The market's clock plus the 24 h a skill without sla_seconds is given: the latest deadline it takes is an hour on.
      slaDeadline: BigInt(Date.parse(MARKET_START) / 1000 + 86_400),
    })
    await anvil.mine(2)
    return hash
  }

  test('behavior: a deposit naming the seller pays the task sent with its tx_hash', async () => {
    const { order } = await market({ escrow: true })
    const taskId = depositId('paid')
    const hash = await depositFor(buyer, seller.address, taskId)
    const { created } = await order({ tx_hash: hash })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({
      status: 'paid',
      payment: { method: 'escrow', escrow_task_id: taskId, escrow_contract: escrow, paid_amount: 2.5 },
    })
  })

  test('error: a deposit for another seller is refused with 422', async () => {
    const { order } = await market({ escrow: true })
    const hash = await depositFor(buyer, stranger.address, depositId('elsewhere'))
    expectProblemShape((await order({ tx_hash: hash })).created, 422, 'wrong_recipient')
  })

  test("behavior: deposits are claimed per (buyer, taskId): another buyer's deposit under the same taskId pays its own task", async () => {
    const { order } = await market({ escrow: true })
    const taskId = depositId('reused')
    const first = await depositFor(buyer, seller.address, taskId)
    // The escrow keys deposits by buyer, so another buyer can deposit under the same taskId.
    const second = await depositFor(secondBuyer, seller.address, taskId)
    expect((await order({ tx_hash: first })).created.status).toBe(201)
    expect((await order({ tx_hash: second }, secondBuyer)).created.status).toBe(201)
    // The same buyer's deposit id is spent once, even in another transaction.
    const again = await depositFor(buyer, seller.address, depositId('other'))
    expect((await order({ tx_hash: again })).created.status).toBe(201)
  })
})

describe('two server processes on one database', () => {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-chain-'))
  const servers: MarketServer[] = []
  afterAll(() => {
    for (const server of servers) server.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('behavior: racing verifies of one payment on both processes pay the task exactly once', async () => {
    const env = {
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      CHAIN_RPC_URL: anvil.rpcUrl,
      // Nodes of one marketplace share its public address, which payer proofs name.
      BASE_URL: 'https://market.example',
    }
    servers.push(...(await Promise.all([startMarketServer(env), startMarketServer(env)])))
    const bases = servers.map((server) => server.base)
    const post = (url: string, body: unknown, key?: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      })
    const [a = '', b = ''] = bases
    const registered = (await (
      await post(`${a}/api/agents/register`, {
        name: 'racer',
        skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5' }],
      })
    ).json()) as { apiKey: string }
    await fetch(`${a}/api/agents/racer`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
      body: JSON.stringify({ walletAddress: seller.address }),
    })
    const task = (await (await post(`${b}/api/agents/racer/tasks`, { skill: 'deep-search' })).json()) as {
      task_id: string
      payment: { payer_proof: ServedPayerProof }
    }
    const hash = await anvil.transferUsdc(buyer, seller.address, PRICE)
    await anvil.mine(2)
    const signature = await signPayerProof(buyer, task.payment.payer_proof, hash)
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        post(`${index % 2 ? a : b}/api/agents/racer/tasks/${task.task_id}/verify-payment`, {
          tx_hash: hash,
          payer_signature: signature,
        }),
      ),
    )
    const outcomes = await Promise.all(
      answers.map(async (answer) => `${answer.status} ${(await answer.text()).slice(0, 120)}`),
    )
    // The whole list in the assertion, so a failure shows what each process answered.
    expect(outcomes.map((outcome) => outcome.slice(0, 3)).sort(), outcomes.join('\n')).toEqual([
      '200',
      ...Array.from({ length: 9 }, () => '409'),
    ])
    const read = (await (await fetch(`${a}/api/agents/racer/tasks/${task.task_id}`)).json()) as {
      status: string
    }
    expect(read.status).toBe('paid')
  }, 300_000)
})
