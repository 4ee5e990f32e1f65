import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { viemChain } from '@agentmarket/core/viem'
import { type Address, encodeFunctionData, type Hex, keccak256, toHex } from 'viem'
import { type HDAccount, mnemonicToAccount } from 'viem/accounts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import {
  ANVIL_MNEMONIC,
  type Anvil,
  ESCROW_ABI,
  paymentChain,
  USDC_ABI,
  USDC_ADDRESS,
} from '../support/anvil.ts'
import { type ServedPayerProof, signPayerProof } from '../support/payer.ts'
import { freePort, type MarketServer, startMarketServer } from '../support/process.ts'
import { type CaptureRelay, captureRelay, sendMail } from '../support/smtp.ts'

// The fault battery of the rails where the buyer broadcasts and the server verifies (issue 39): card-and-verify,
// escrow deposits, the job escrow and e-mail orders. Each case is one buyer's order under one fault, driven through
// the HTTP API; it ends by counting the buyer's payments that landed on chain and whether the task the buyer holds
// is paid. The totals are printed at the end and kept in bench/RESULTS.md.

const PRICE = 2_500_000n // 2.5 USDC
// Every wait below is on a condition or a counted number of polls; this only bounds a hung case.
setDefaultTimeout(300_000)
const MARKET_START = '2026-06-01T12:00:00.000Z'

let anvil: Anvil
let escrow: Address
let seller: HDAccount
/** One buyer per case, so each case's charges are its buyer's balance change alone. */
let buyers: HDAccount[]
let rpc: RpcProxy

/** What one case ended with. */
type Outcome = { name: string; charges: number; served: boolean }
const outcomes: Outcome[] = []

/** How the proxy in front of anvil behaves: passing, refusing (HTTP 502), or holding every call until thawed. */
type RpcMode = 'up' | 'down' | 'frozen'

/** An RPC in front of anvil that the server and the buyers both use, and that a case can break. */
type RpcProxy = {
  url: string
  set(mode: RpcMode): void
  /** The next eth_sendRawTransaction reaches the chain, but its answer is lost (HTTP 504). */
  loseNextSendAnswer(): void
  stop(): void
}

function rpcProxy(target: string): RpcProxy {
  let mode: RpcMode = 'up'
  let thaw = Promise.withResolvers<void>()
  let loseSend = false
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const body = await request.text()
      if (mode === 'frozen') await thaw.promise
      if (mode === 'down') return new Response('bad gateway', { status: 502 })
      const answer = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      const text = await answer.text()
      if (loseSend && body.includes('eth_sendRawTransaction')) {
        loseSend = false
        return new Response('gateway timeout', { status: 504 })
      }
      return new Response(text, { status: answer.status, headers: { 'content-type': 'application/json' } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    set(next) {
      if (mode === 'frozen' && next !== 'frozen') {
        mode = next
        thaw.resolve()
        thaw = Promise.withResolvers<void>()
        return
      }
      mode = next
    },
    loseNextSendAnswer: () => {
      loseSend = true
    },
    stop: () => server.stop(true),
  }
}

beforeAll(async () => {
  const chain = await paymentChain(['seller'], { escrow: true })
  ;({ anvil, escrow } = chain)
  seller = chain.accounts.seller
  // Past anvil's ten accounts: derived from the same mnemonic, given gas money and USDC.
  buyers = Array.from({ length: 30 }, (_, index) =>
    mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 20 + index }),
  )
  for (const buyer of buyers) {
    await anvil.testClient.setBalance({ address: buyer.address, value: 10n ** 20n })
    await anvil.mintUsdc(buyer.address, 100n * PRICE)
  }
  rpc = rpcProxy(anvil.rpcUrl)
})

afterAll(() => {
  const doubles = outcomes.filter((outcome) => outcome.charges > 1).length
  const unserved = outcomes.filter((outcome) => outcome.charges >= 1 && !outcome.served).length
  console.log(
    `settlement faults (buyer-broadcast rails): ${outcomes.length} cases, double-charged ${doubles}, charged-unserved ${unserved}`,
  )
  for (const outcome of outcomes)
    console.log(`  ${outcome.name}: charged ${outcome.charges}, served ${outcome.served}`)
  rpc?.stop()
  anvil?.stop()
})

// A case that fails leaves the RPC as it broke it; the next starts with it up.
afterEach(() => rpc.set('up'))

let nextBuyer = 0
/** A fresh funded buyer and its balance now. */
async function newBuyer() {
  const buyer = buyers[nextBuyer++]
  if (!buyer) throw new Error('the battery needs more buyers')
  return { buyer, before: await anvil.usdcOf(buyer.address) }
}

/**
 * Signs a USDC payment of the price from `buyer` to `to` and broadcasts it through the (possibly broken) RPC, as a
 * careful wallet does: the hash is known before the broadcast, and a broadcast whose answer is lost is sent again
 * (the same signed bytes: it cannot pay twice).
 */
async function pay(buyer: HDAccount, to: Address, data?: Hex): Promise<Hex> {
  const wallet = anvil.walletFor(buyer)
  const request = await wallet.prepareTransactionRequest({
    to: data ? to : USDC_ADDRESS,
    data: data ?? encodeFunctionData({ abi: USDC_ABI, functionName: 'transfer', args: [to, PRICE] }),
    gas: 300_000n,
  })
  const raw = await wallet.signTransaction(request)
  const hash = keccak256(raw)
  for (let attempt = 0; attempt < 3; attempt++) {
    const sent = await fetch(rpc.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] }),
    })
    const answer = sent.ok ? ((await sent.json()) as { result?: Hex; error?: { message: string } }) : null
    // Sent before: anvil knows the transaction (or its nonce is spent by it).
    if (answer?.result === hash || answer?.error) break
  }
  await waitFor(async () => (await receiptOf(hash)) !== null)
  return hash
}

/** The receipt of `hash` read straight from anvil, or null. */
const receiptOf = (hash: Hex) => anvil.publicClient.getTransactionReceipt({ hash }).catch(() => null)

/** Waits until `done` holds, polling; fails after many polls (a bound on steps, not on the machine's speed). */
async function waitFor(done: () => Promise<boolean>, polls = 3_000) {
  for (let poll = 0; poll < polls; poll++) {
    if (await done()) return
    await Bun.sleep(10)
  }
  throw new Error('condition not met')
}

/** How many prices left the buyer's wallet since `before`. */
async function chargesOf(buyer: HDAccount, before: bigint): Promise<number> {
  return Number((before - (await anvil.usdcOf(buyer.address))) / PRICE)
}

/** Records one case's ending and checks it: one charge and a paid task the buyer holds. */
async function settle(name: string, buyer: HDAccount, before: bigint, status: string) {
  const charges = await chargesOf(buyer, before)
  const served = ['paid', 'completed', 'delivered'].includes(status)
  outcomes.push({ name, charges, served })
  expect({ charges, status }).toEqual({ charges: 1, status: 'paid' })
}

/** A test market on the proxied chain, with a seller of a 2.5 USDC skill; `escrow` turns the escrow on. */
async function market(options: { escrow?: boolean } = {}) {
  const app = await testApp(MARKET_START, {
    chain: viemChain({ rpcUrl: rpc.url, timeoutMs: 5_000 }),
    chainConfig: { escrowContract: options.escrow ? escrow : null },
  })
  const registered = await app.register('seller', {
    skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5' }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: seller.address },
  })
  const card = async () =>
    (await app.call('GET', '/api/agents/seller/agent-card.json')).json._extensions.commerce
      .payer_proof as ServedPayerProof
  const read = async (id: string) => (await app.call('GET', `/api/agents/seller/tasks/${id}`)).json
  /** Orders the skill; with `txHash`, paid by `buyer` with its signed claim. */
  const order = async (buyer: HDAccount, txHash?: Hex, key?: string) => {
    const signed = txHash
      ? { tx_hash: txHash, payer_signature: await signPayerProof(buyer, await card(), txHash) }
      : {}
    return app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'deep-search', ...signed },
      ...(key && { headers: { 'idempotency-key': key } }),
    })
  }
  const proofs = new Map<string, ServedPayerProof>()
  const verify = async (buyer: HDAccount, id: string, txHash: Hex) => {
    // A paid task shows no payer_proof any more: a retry signs what the first call was shown.
    const proof = (await read(id)).payment.payer_proof ?? proofs.get(id)
    proofs.set(id, proof)
    return app.call('POST', `/api/agents/seller/tasks/${id}/verify-payment`, {
      body: { tx_hash: txHash, payer_signature: await signPayerProof(buyer, proof, txHash) },
    })
  }
  /** Runs background re-check passes (the host's timer) until none is due, the clock moved past each delay. */
  const recheckUntilIdle = async () => {
    for (let pass = 0; pass < 40; pass++) {
      app.clock.advance(300_000)
      const report = await app.market.recheckPendingPayments()
      if (report.checked === 0) return
    }
  }
  return { ...app, order, verify, read, recheckUntilIdle }
}

describe('card-and-verify: the buyer pays, then asks the market to verify', () => {
  test('behavior: the RPC down during verify: 503 keeps the hash; the buyer walks away; the re-check pays it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    rpc.set('down')
    const answer = await app.verify(buyer, id, hash)
    expect(answer.status).toBe(503)
    rpc.set('up')
    await app.recheckUntilIdle()
    await settle('card: RPC down during verify, buyer gone', buyer, before, (await app.read(id)).status)
    expect(answer.json.detail).toContain('Do not pay again')
  })

  test('behavior: the RPC frozen past the timeout during verify: 503; the buyer retries after Retry-After and is paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    rpc.set('frozen')
    const frozen = await app.verify(buyer, id, hash)
    expect(frozen.status).toBe(503)
    expect(frozen.headers.get('retry-after')).toBeTruthy()
    rpc.set('up')
    expect((await app.verify(buyer, id, hash)).status).toBe(200)
    await settle('card: RPC frozen during verify, buyer retries', buyer, before, (await app.read(id)).status)
  })

  test("behavior: the broadcast's answer is lost: the wallet sends the same bytes again, one payment, paid", async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    rpc.loseNextSendAnswer()
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    expect((await app.verify(buyer, id, hash)).status).toBe(200)
    await settle('card: broadcast answer lost', buyer, before, (await app.read(id)).status)
  })

  test('behavior: confirmations slower than the client: 202 keeps the hash (rechecked), the client gives up, the re-check pays', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const hash = await pay(buyer, seller.address)
    const answers = []
    for (let attempt = 0; attempt < 3; attempt++) answers.push(await app.verify(buyer, id, hash))
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202])
    // The client gave up; the blocks come after every timeout it had.
    await anvil.mine(2)
    await app.recheckUntilIdle()
    await settle('card: confirmations slower than the client', buyer, before, (await app.read(id)).status)
    expect(answers[0]?.json).toMatchObject({ confirmations: 1, required: 3, rechecked: true })
  })

  test('behavior: a payment under re-check when the 24 h expiry comes holds the task: the expiry pass skips it, the re-check that confirms later pays it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    // The buyer pays a minute before the unpaid order's 24 hours are up; the confirmations come after them.
    app.clock.advance(24 * 60 * 60 * 1000 - 60_000)
    const hash = await pay(buyer, seller.address)
    expect((await app.verify(buyer, id, hash)).status).toBe(202)
    app.clock.advance(120_000)
    await app.market.expireUnpaidTasks()
    // Charged, so never expired while its payment may still land: it waits for its re-check.
    expect((await app.read(id)).status).toBe('pending_payment')
    await anvil.mine(2)
    await app.recheckUntilIdle()
    await settle('card: payment under re-check at the expiry', buyer, before, (await app.read(id)).status)
  })

  test('behavior: a buyer back a day after a 202 does what the answers say: a task still unpaid is ordered and paid again', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const hash = await pay(buyer, seller.address)
    expect((await app.verify(buyer, id, hash)).status).toBe(202)
    // The client crashed; the blocks come, the market runs its passes, and a day goes by.
    await anvil.mine(2)
    await app.recheckUntilIdle()
    app.clock.advance(25 * 60 * 60 * 1000)
    await app.market.expireUnpaidTasks()
    let held = id
    if ((await app.read(id)).status !== 'paid') {
      // 409 task_expired says "order again": this buyer does, and pays again.
      held = (await app.order(buyer)).json.task_id
      const again = await pay(buyer, seller.address)
      await anvil.mine(2)
      await app.verify(buyer, held, again)
    }
    await settle(
      'card: buyer back after a day, pays again if asked',
      buyer,
      before,
      (await app.read(held)).status,
    )
  })

  test('behavior: a chain outage longer than the re-check budget spends none of it; the payment is paid when the chain is back', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const hash = await pay(buyer, seller.address)
    const created = await app.order(buyer, hash)
    expect(created.status).toBe(202)
    expect(created.json.verification.rechecked).toBe(true)
    rpc.set('down')
    const failed = []
    for (let pass = 0; pass < 20; pass++) {
      app.clock.advance(300_000)
      failed.push((await app.market.recheckPendingPayments()).failure !== undefined)
    }
    rpc.set('up')
    await anvil.mine(2)
    await app.recheckUntilIdle()
    await settle(
      'card: chain outage past the re-check budget',
      buyer,
      before,
      (await app.read(created.json.task_id)).status,
    )
    expect(failed[0]).toBe(true)
  })

  test('behavior: a reorg drops the pending payment: the buyer is refunded by the chain, pays again once, and is paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const snapshot = await anvil.testClient.snapshot()
    const dropped = await pay(buyer, seller.address)
    expect((await app.verify(buyer, id, dropped)).status).toBe(202)
    await anvil.testClient.revert({ id: snapshot })
    expect(await receiptOf(dropped)).toBeNull()
    await app.recheckUntilIdle()
    // The market never said paid and the payment is gone from the chain: paying again is right.
    expect((await app.read(id)).status).toBe('pending_payment')
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    expect((await app.verify(buyer, id, hash)).status).toBe(200)
    await settle('card: reorged payment, paid again', buyer, before, (await app.read(id)).status)
  })

  test('behavior: an order with tx_hash whose answer is lost, retried with its Idempotency-Key: the same paid task', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    const lost = await app.order(buyer, hash, 'order-1')
    const retried = await app.order(buyer, hash, 'order-1')
    expect(retried.json.task_id).toBe(lost.json.task_id)
    await settle(
      'card: order retried with its key',
      buyer,
      before,
      (await app.read(retried.json.task_id)).status,
    )
  })

  test("behavior: an order with tx_hash whose answer is lost, retried without a key: the 409 names the buyer's paid task", async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    await app.order(buyer, hash)
    const retried = await app.order(buyer, hash)
    expect(retried.status).toBe(409)
    expect(retried.json.code).toBe('tx_already_used')
    // The buyer holds only what the answers said: the task the 409 names, if any.
    const named = /already paid task (task_\w+)/.exec(retried.json.detail)?.[1]
    const status = named ? (await app.read(named)).status : 'no task'
    await settle('card: order retried without a key', buyer, before, status)
    expect(retried.json.detail).toContain('Do not pay again')
  })

  test('behavior: an order with a hash not final yet whose 202 is lost, retried without a key: the same task, paid by the re-check', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const hash = await pay(buyer, seller.address)
    const lost = await app.order(buyer, hash)
    const retried = await app.order(buyer, hash)
    await anvil.mine(2)
    await app.recheckUntilIdle()
    // The buyer holds the task of the answer it got: the retry's.
    await settle(
      'card: pending order retried without a key',
      buyer,
      before,
      (await app.read(retried.json.task_id)).status,
    )
    expect([lost.status, retried.status, retried.json.task_id]).toEqual([202, 202, lost.json.task_id])
  })

  test('attack: the kept 202 of an order paid by a hash not final yet is removed once the re-check pays it; the same hash and signature sent again still order nothing', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const hash = await pay(buyer, seller.address)
    const signature = await signPayerProof(
      buyer,
      (await app.call('GET', '/api/agents/seller/agent-card.json')).json._extensions.commerce.payer_proof,
      hash,
    )
    const first = await app.order(buyer, hash)
    expect(first.status).toBe(202)
    const row = `order:pending-tx:${hash.toLowerCase()}`
    expect(await app.store.kvGet(row)).not.toBeNull()
    await anvil.mine(2)
    await app.recheckUntilIdle()
    expect(await app.store.kvGet(row)).toBeNull()
    // The replay after the row is gone: the paid task's claim on the hash refuses it, naming the buyer's task.
    const replay = await app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'deep-search', tx_hash: hash, payer_signature: signature },
    })
    expect(replay.status).toBe(409)
    expect(replay.json.code).toBe('tx_already_used')
    expect(replay.json.detail).toContain(first.json.task_id)
    await settle(
      'card: replay after the kept answer is removed',
      buyer,
      before,
      (await app.read(first.json.task_id)).status,
    )
  })

  test('behavior: a verify whose 200 is lost, retried: the same 200 with the paid task; another hash is 409 task_not_pending', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market()
    const id = (await app.order(buyer)).json.task_id
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    await app.verify(buyer, id, hash)
    const retried = await app.verify(buyer, id, hash)
    expect(retried.status).toBe(200)
    expect(retried.json).toMatchObject({ verified: true, task: { task_id: id, status: 'paid' } })
    // Another hash (none sent: the buyer pays once) is refused before the chain is read.
    const other = keccak256(toHex(`another-${id}`))
    expect((await app.verify(buyer, id, other)).json.code).toBe('task_not_pending')
    await settle('card: verify retried after a lost 200', buyer, before, (await app.read(id)).status)
  })
})

describe('escrow deposits', () => {
  /** Approves the escrow and deposits the price for the seller: the deposit's hash. */
  async function deposit(buyer: HDAccount) {
    await anvil.approveUsdc(buyer, escrow, PRICE)
    const data = encodeFunctionData({
      abi: ESCROW_ABI,
      functionName: 'deposit',
      args: [
        keccak256(toHex(`deposit-${buyer.address}`)),
        seller.address,
        PRICE,
        BigInt(Date.parse(MARKET_START) / 1000 + 86_400),
      ],
    })
    return pay(buyer, escrow, data)
  }

  test('behavior: a deposit verified while the RPC is down: 503 keeps the hash; the re-check pays it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market({ escrow: true })
    const id = (await app.order(buyer)).json.task_id
    const hash = await deposit(buyer)
    await anvil.mine(2)
    rpc.set('down')
    expect((await app.verify(buyer, id, hash)).status).toBe(503)
    rpc.set('up')
    await app.recheckUntilIdle()
    await settle('escrow: RPC down during verify', buyer, before, (await app.read(id)).status)
  })

  test('behavior: a deposit sent with the order at one confirmation: 202, the client is gone, the re-check pays it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await market({ escrow: true })
    const hash = await deposit(buyer)
    const created = await app.order(buyer, hash)
    expect(created.status).toBe(202)
    await anvil.mine(2)
    await app.recheckUntilIdle()
    await settle(
      'escrow: order at one confirmation',
      buyer,
      before,
      (await app.read(created.json.task_id)).status,
    )
  })
})

describe('job escrow', () => {
  /** A market following a fresh job escrow, its clock at the chain's, with a seller of a 2.5 USDC job skill. */
  async function jobMarket() {
    const jobEscrow = (await anvil.deployJobEscrow()).address
    const chainNow = new Date(Number((await anvil.publicClient.getBlock()).timestamp) * 1000)
    const app = await testApp(chainNow.toISOString(), {
      chain: viemChain({ rpcUrl: rpc.url, timeoutMs: 5_000 }),
      chainConfig: {
        jobEscrowContract: jobEscrow,
        jobEscrowStartBlock: await anvil.publicClient.getBlockNumber(),
      },
    })
    const registered = await app.register('seller', {
      skills: [{ name: 'Essay', type: 'purchasable', price: '2.5', sla_seconds: 600, review_seconds: 1800 }],
    })
    await app.call('PUT', '/api/agents/seller', {
      key: registered.key,
      body: { walletAddress: seller.address },
    })
    /** Orders the job for `buyer` (with an Idempotency-Key when given). */
    const order = (buyer: HDAccount, key?: string) =>
      app.call('POST', '/api/agents/seller/tasks', {
        body: { skill: 'essay', buyer_wallet: buyer.address },
        ...(key && { headers: { 'idempotency-key': key } }),
      })
    const read = async (id: string) => (await app.call('GET', `/api/agents/seller/tasks/${id}`)).json
    /** The escrow call of a task's job for `step` (approve, fund), as the task shows it. */
    const callOf = async (id: string, step: string) =>
      ((await read(id)).escrow_job.calls as { step: string; to: Address; data: Hex }[]).find(
        (call) => call.step === step,
      ) as { to: Address; data: Hex }
    /** The hashes of the approvals sent, in order. */
    const approvals: Hex[] = []
    /** Approves the escrow and funds the task's job: the funding's hash. */
    const fund = async (buyer: HDAccount, id: string, beforeFunding: () => void = () => {}) => {
      const approve = await callOf(id, 'approve')
      approvals.push(await pay(buyer, approve.to, approve.data))
      const funding = await callOf(id, 'fund')
      beforeFunding()
      return pay(buyer, funding.to, funding.data)
    }
    const proofs = new Map<string, ServedPayerProof>()
    const verify = async (buyer: HDAccount, id: string, txHash: Hex) => {
      // A paid task shows no payer_proof any more: a retry signs what the first call was shown.
      const proof = (await read(id)).payment.payer_proof ?? proofs.get(id)
      proofs.set(id, proof)
      return app.call('POST', `/api/agents/seller/tasks/${id}/verify-payment`, {
        body: { tx_hash: txHash, payer_signature: await signPayerProof(buyer, proof, txHash) },
      })
    }
    /** The follower's and the re-check's passes until no check is due, the clock moved past each delay. */
    const settleChecks = async () => {
      await app.market.followJobEscrow()
      for (let pass = 0; pass < 40; pass++) {
        app.clock.advance(300_000)
        const report = await app.market.recheckPendingPayments()
        await app.market.followJobEscrow()
        if (report.checked === 0) return
      }
    }
    return { ...app, order, read, fund, approvals, verify, settleChecks }
  }

  test('behavior: a job funded while the RPC is down: verify answers 503; the follower pays the task when the chain is back', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const funding = await app.fund(buyer, id)
    await anvil.mine(2)
    rpc.set('down')
    const answer = await app.verify(buyer, id, funding)
    const followed = await app.market.followJobEscrow().then(
      () => 'followed',
      () => 'failed',
    )
    rpc.set('up')
    await app.market.followJobEscrow()
    await settle('job escrow: funded while the RPC is down', buyer, before, (await app.read(id)).status)
    expect([answer.status, followed]).toEqual([503, 'failed'])
  })

  test('behavior: the RPC frozen past the timeout during a job verify: 503 with Retry-After; the retry is paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const funding = await app.fund(buyer, id)
    await anvil.mine(2)
    rpc.set('frozen')
    const frozen = await app.verify(buyer, id, funding)
    rpc.set('up')
    expect(frozen.status).toBe(503)
    expect(frozen.headers.get('retry-after')).toBeTruthy()
    expect((await app.verify(buyer, id, funding)).status).toBe(200)
    await settle('job escrow: RPC frozen during verify, retried', buyer, before, (await app.read(id)).status)
  })

  test("behavior: the funding broadcast's answer is lost and the job verify's answer too: the same bytes again, the verify retried, one funding, paid", async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const funding = await app.fund(buyer, id, () => rpc.loseNextSendAnswer())
    await anvil.mine(2)
    const lost = await app.verify(buyer, id, funding)
    const retried = await app.verify(buyer, id, funding)
    expect([lost.status, retried.status]).toEqual([200, 200])
    expect(retried.json).toMatchObject({ verified: true, task: { task_id: id, status: 'paid' } })
    await settle(
      'job escrow: funding answer lost, verify retried',
      buyer,
      before,
      (await app.read(id)).status,
    )
  })

  test('behavior: confirmations slower than the client: the job verify answers 202 keeping the hash, the client gives up, the follower and re-check pay it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const funding = await app.fund(buyer, id)
    const answers = []
    for (let attempt = 0; attempt < 3; attempt++) answers.push(await app.verify(buyer, id, funding))
    expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202])
    expect(answers[0]?.json).toMatchObject({ rechecked: true })
    // The client gave up; the blocks come after every timeout it had.
    await anvil.mine(2)
    await app.settleChecks()
    await settle(
      'job escrow: confirmations slower than the client',
      buyer,
      before,
      (await app.read(id)).status,
    )
  })

  test('behavior: the funding block is reorged out before its confirmations: never paid from it; the buyer funds again once and is paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const snapshot = await anvil.testClient.snapshot()
    const dropped = await app.fund(buyer, id)
    expect((await app.verify(buyer, id, dropped)).status).toBe(202)
    await anvil.testClient.revert({ id: snapshot })
    expect(await receiptOf(dropped)).toBeNull()
    await anvil.mine(3)
    await app.settleChecks()
    // The market never said paid and the funding is gone from the chain: funding again is right.
    expect((await app.read(id)).status).toBe('pending_payment')
    const funding = await app.fund(buyer, id)
    await anvil.mine(2)
    expect((await app.verify(buyer, id, funding)).status).toBe(200)
    await settle('job escrow: reorged funding, funded again', buyer, before, (await app.read(id)).status)
  })

  test('behavior: the funding block is reorged out and the network mines the same funding again: the task is paid once, from it', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const id = (await app.order(buyer)).json.task_id
    const snapshot = await anvil.testClient.snapshot()
    const funding = await app.fund(buyer, id)
    expect((await app.verify(buyer, id, funding)).status).toBe(202)
    await app.settleChecks()
    const sent = [app.approvals.at(-1) ?? '0x', funding]
    const raws = await Promise.all(
      sent.map(
        async (hash) =>
          (await anvil.publicClient.request({
            method: 'eth_getRawTransactionByHash' as never,
            params: [hash] as never,
          })) as Hex,
      ),
    )
    await anvil.testClient.revert({ id: snapshot })
    expect(await receiptOf(funding)).toBeNull()
    await app.settleChecks()
    expect((await app.read(id)).status).toBe('pending_payment')
    // A node re-includes both transactions from its pool, in order; the buyer did nothing more.
    for (const raw of raws)
      await anvil.publicClient.request({ method: 'eth_sendRawTransaction', params: [raw] })
    await anvil.mine(3)
    await app.settleChecks()
    await settle('job escrow: reorged funding mined again', buyer, before, (await app.read(id)).status)
  })

  test('behavior: a job order whose answer is lost, retried with its Idempotency-Key: the same task, funded once and paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const lost = await app.order(buyer, 'job-order-1')
    const retried = await app.order(buyer, 'job-order-1')
    expect(retried.json.task_id).toBe(lost.json.task_id)
    const id = retried.json.task_id
    const funding = await app.fund(buyer, id)
    await anvil.mine(2)
    expect((await app.verify(buyer, id, funding)).status).toBe(200)
    await settle('job escrow: order retried with its key', buyer, before, (await app.read(id)).status)
  })

  test('behavior: a job order whose answer is lost, retried without a key: the buyer funds the task it holds, once; the lost one is never paid', async () => {
    const { buyer, before } = await newBuyer()
    const app = await jobMarket()
    const lost = await app.order(buyer)
    const retried = await app.order(buyer)
    const id = retried.json.task_id
    const funding = await app.fund(buyer, id)
    await anvil.mine(2)
    expect((await app.verify(buyer, id, funding)).status).toBe(200)
    await app.settleChecks()
    // The funding names its own job: it pays the task the buyer holds and nothing else.
    expect((await app.read(lost.json.task_id)).status).toBe('pending_payment')
    await settle('job escrow: order retried without a key', buyer, before, (await app.read(id)).status)
  })
})

describe('e-mail orders (real SMTP on loopback, bun start)', () => {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-settle-mail-'))
  let server: MarketServer | undefined
  let relay: CaptureRelay | undefined
  afterAll(async () => {
    server?.stop()
    await relay?.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('behavior: an order mailed twice (a redelivery) and paid, verified while the RPC is down: one task, paid by the re-check', async () => {
    relay = await captureRelay(freePort())
    const smtpPort = freePort()
    server = await startMarketServer({
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      CHAIN_RPC_URL: rpc.url,
      ORDER_MAILBOX: 'orders@market.test',
      SMTP_INBOUND_PORT: String(smtpPort),
      SMTP_OUTBOUND_URL: relay.url,
      MAIL_AUTH: 'off',
    })
    const base = server.base
    const registered = (await (
      await fetch(`${base}/api/agents/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'mailed',
          skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5' }],
        }),
      })
    ).json()) as { apiKey: string }
    await fetch(`${base}/api/agents/mailed`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
      body: JSON.stringify({ walletAddress: seller.address }),
    })
    const message = {
      from: 'Ann Buyer <ann@buyer.test>',
      to: 'orders@market.test',
      subject: 'mailed/deep-search',
      text: '{"topic": "solar"}',
      messageId: '<settle-1@buyer.test>',
    }
    await sendMail(smtpPort, message)
    // The buyer's mail server did not see the answer and delivers the same message again.
    await sendMail(smtpPort, message)
    const reply = await relay.waitFor((email) => email.inReplyTo === message.messageId, 120_000)
    const id = reply.headers.find((item) => item.key === 'x-agentmarket-task')?.value ?? ''
    const read = async () =>
      (await (await fetch(`${base}/api/agents/mailed/tasks/${id}`)).json()) as never as {
        status: string
        payment: { payer_proof: ServedPayerProof }
      }
    const { buyer, before } = await newBuyer()
    const proof = (await read()).payment.payer_proof
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    rpc.set('down')
    const answer = await fetch(`${base}/api/agents/mailed/tasks/${id}/verify-payment`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tx_hash: hash, payer_signature: await signPayerProof(buyer, proof, hash) }),
    })
    rpc.set('up')
    let status = ''
    await waitFor(async () => {
      status = (await read()).status
      return status === 'paid'
    }).catch(() => undefined)
    await settle('mail: order redelivered, verify with the RPC down', buyer, before, status)
    const tasks = (await (
      await fetch(`${base}/api/agents/mailed/tasks?status=all`, {
        headers: { authorization: `Bearer ${registered.apiKey}` },
      })
    ).json()) as { total: number }
    expect([answer.status, tasks.total]).toEqual([503, 1])
  }, 300_000)
})

describe('a server process killed between the payment and its record', () => {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-settle-'))
  let server: MarketServer | undefined
  afterAll(() => {
    server?.stop()
    rmSync(folder, { recursive: true, force: true })
  })

  test('behavior: verify answered 503 (RPC down), the process SIGKILLed and restarted on the same file: the restarted node pays the kept hash', async () => {
    const env = {
      HOME: folder,
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      CHAIN_RPC_URL: rpc.url,
      BASE_URL: 'https://market.example',
    }
    server = await startMarketServer(env)
    const json = (base: string, path: string, body?: unknown, key?: string) =>
      fetch(`${base}${path}`, {
        method: body === undefined ? 'GET' : body === null ? 'PUT' : 'POST',
        headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) },
        ...(body !== undefined && body !== null && { body: JSON.stringify(body) }),
      }).then(async (response) => ({ status: response.status, json: (await response.json()) as never }))
    const registered = await json(server.base, '/api/agents/register', {
      name: 'killed',
      skills: [{ name: 'Deep Search', type: 'purchasable', price: '2.5' }],
    })
    const key = (registered.json as { apiKey: string }).apiKey
    await fetch(`${server.base}/api/agents/killed`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ walletAddress: seller.address }),
    })
    const { buyer, before } = await newBuyer()
    const task = (await json(server.base, '/api/agents/killed/tasks', { skill: 'deep-search' })).json as {
      task_id: string
      payment: { payer_proof: ServedPayerProof }
    }
    const hash = await pay(buyer, seller.address)
    await anvil.mine(2)
    rpc.set('down')
    const answer = await json(server.base, `/api/agents/killed/tasks/${task.task_id}/verify-payment`, {
      tx_hash: hash,
      payer_signature: await signPayerProof(buyer, task.payment.payer_proof, hash),
    })
    expect(answer.status).toBe(503)
    server.process.kill('SIGKILL')
    await server.process.exited
    rpc.set('up')
    server = await startMarketServer(env)
    const base = server.base
    let status = ''
    // A node that never pays it is counted (charged, unserved) before the case fails.
    await waitFor(async () => {
      status = ((await json(base, `/api/agents/killed/tasks/${task.task_id}`)).json as { status: string })
        .status
      return status === 'paid'
    }).catch(() => undefined)
    await settle('card: node SIGKILLed after a 503, restarted', buyer, before, status)
  }, 300_000)
})
