import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ChainReader } from '@agentmarket/core'
import { viemChain } from '@agentmarket/core/viem'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import solc from 'solc'
import {
  type Abi,
  type Address,
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  type Hex,
  hexToBigInt,
  numberToHex,
  parseAbi,
  parseSignature,
  serializeSignature,
  type TransactionReceipt,
} from 'viem'
import { generatePrivateKey, type HDAccount, privateKeyToAccount } from 'viem/accounts'
import {
  JOB_ESCROW_ABI,
  jobIdOf,
  jobStepData,
  reasonHash,
} from '../../packages/core/src/payments/JobEscrow.ts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from '../support/anvil.ts'
import { changedFundData, type FundArgs } from '../support/jobEscrow.ts'
import { signPayerProof, verifyPayment } from '../support/payer.ts'

// Attacks on jobs (issue 23): the buyer's signed review of a delivery, the seller's delivery and its deadlines, and the
// job escrow's fundings and events as the follower applies them. Each test asserts the safe behaviour: nothing moves,
// a clear RFC 9457 problem. A test that fails is a break the final report of this suite names.

type App = Awaited<ReturnType<typeof testApp>>
type Wallet = ReturnType<typeof privateKeyToAccount>
// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any

const buyer = privateKeyToAccount(generatePrivateKey())
const stranger = privateKeyToAccount(generatePrivateKey())
const sellerWallet = privateKeyToAccount(generatePrivateKey())
const ownerWallet = privateKeyToAccount(generatePrivateKey())

/** secp256k1's group order: s and n - s both verify; only the low one is canonical (EIP-2). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

/** The same signature with s replaced by n - s and the parity flipped: another encoding of one signature. */
function malleated(signature: Hex): Hex {
  const { r, s, yParity } = parseSignature(signature)
  const high = numberToHex(SECP256K1_N - hexToBigInt(s), { size: 32 })
  return serializeSignature({ r, s: high, yParity: yParity === 0 ? 1 : 0 })
}

const SKILLS = [
  { name: 'Reviewed', type: 'free', sla: 'ten minutes', sla_seconds: 600, review_seconds: 3600 },
  { name: 'Quick', type: 'free', sla: 'a minute', sla_seconds: 60 },
]

/** A market (in process) with a seller of free skills; its wallet is sellerWallet. */
async function freeMarket(options: Parameters<typeof testApp>[1] = {}) {
  const app = await testApp(undefined, options)
  const seller = await app.register('seller', { skills: SKILLS })
  await app.call('PUT', '/api/agents/seller', {
    key: seller.key,
    body: { walletAddress: sellerWallet.address },
  })
  const profile = async () => (await app.call('GET', '/api/community/agents/seller')).json.deliveries
  const feedKinds = async () =>
    (await app.call('GET', '/api/feed/live')).json.events.map((event: { kind: string }) => event.kind)
  return { ...app, seller, profile, feedKinds }
}

/** An order of `skill` by `buyerWallet`, with its delivery, reads, and the review signed as the task shows it. */
async function orderOf(
  app: App & { seller: { key: string } },
  skill = 'reviewed',
  buyerWallet: string | null = buyer.address,
) {
  const created = await app.call('POST', '/api/agents/seller/tasks', {
    body: { skill, ...(buyerWallet && { buyer_wallet: buyerWallet }) },
  })
  expect(created.status).toBe(201)
  const id: string = created.json.task_id
  const path = `/api/agents/seller/tasks/${id}`
  const deliver = (url = 'https://example.com/result') =>
    app.call('POST', `${path}/complete`, { key: app.seller.key, body: { result_url: url } })
  const read = async (): Promise<Json> => (await app.call('GET', path)).json
  let shown: Json = null
  /** The task's review typed data signed by `wallet`, with `decision`, `reason` and any field changed. */
  const sign = async (
    wallet: Wallet,
    decision: 'accept' | 'reject',
    reason = '',
    change: { message?: Record<string, unknown>; domain?: Record<string, unknown> } = {},
  ): Promise<Hex> => {
    shown ??= (await read()).review
    if (!shown) throw new Error('the task shows no review to sign')
    return wallet.signTypedData({
      ...shown,
      domain: { ...shown.domain, ...change.domain },
      message: { ...shown.message, decision, reason, ...change.message },
    })
  }
  const decide = (decision: 'accept' | 'reject', body: Record<string, unknown>, at = path) =>
    app.call('POST', `${at}/${decision}`, { body })
  return { id, path, deliver, read, sign, decide }
}

describe('attacks on the buyer review (in process)', () => {
  test('attack: a buyer review signed for another market, agent name case, chain id, domain or task is refused', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    const other = await orderOf(app)
    await task.deliver()
    await other.deliver()
    const before = await task.read()
    const forgeries = [
      { message: { market: 'https://evil.example' } },
      { message: { market: 'http://localhost:3000/' } },
      { message: { agent: 'SELLER' } },
      { message: { agent: 'Seller' } },
      { message: { task: other.id } },
      { message: { task: task.id.toUpperCase() } },
      { domain: { chainId: 1 } },
      { domain: { name: 'agentmarket-test' } },
      { domain: { version: '2' } },
    ]
    for (const change of forgeries) {
      const answer = await task.decide('accept', { signature: await task.sign(buyer, 'accept', '', change) })
      expectProblemShape(answer, 401, 'invalid_signature')
    }
    // The genuine signature of the other task replayed here, and this task's signature sent under another agent.
    const theirs = await other.sign(buyer, 'accept')
    expectProblemShape(await task.decide('accept', { signature: theirs }), 401, 'invalid_signature')
    const mine = await task.sign(buyer, 'accept')
    const elsewhere = await task.decide('accept', { signature: mine }, `/api/agents/other/tasks/${task.id}`)
    expectProblemShape(elsewhere, 404)
    const crossAgent = await app.register('other', { skills: SKILLS })
    expect(crossAgent.key).toBeTruthy()
    const underOther = await task.decide('accept', { signature: mine }, `/api/agents/other/tasks/${task.id}`)
    expectProblemShape(underOther, 404, 'task_not_found')
    expect(await task.read()).toEqual(before)
    expect(await app.profile()).toMatchObject({ completed: 0, disputes: 0 })
  })

  test("attack: the seller's wallet (with its API key) and the agent owner's wallet cannot accept the seller's own delivery", async () => {
    const app = await freeMarket()
    const paired = await app.pair('owner', app.seller.pairingCode, ownerWallet)
    expect(paired.status).toBeLessThan(300)
    const task = await orderOf(app)
    await task.deliver()
    for (const wallet of [sellerWallet, ownerWallet, stranger]) {
      const signature = await task.sign(wallet, 'accept')
      const answer = await app.call('POST', `${task.path}/accept`, {
        key: app.seller.key,
        body: { signature },
      })
      expectProblemShape(answer, 401, 'invalid_signature')
    }
    expect(await task.read()).toMatchObject({ status: 'delivered', outcome: null, records: [] })
    // Free jobs count toward no on-time ratio (jobSteps reliabilityCounts).
    expect(await app.profile()).toMatchObject({ completed: 0, onTime: 0 })
  })

  test('attack: a malleated (high-s) copy of the buyer signature decides nothing beyond the one decision it signs', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    await task.deliver()
    const reason = 'off topic'
    const reject = await task.sign(buyer, 'reject', reason)
    const accept = await task.sign(buyer, 'accept')
    // The malleated accept cannot become a reject, nor a reject with another reason.
    expectProblemShape(
      await task.decide('reject', { reason, signature: malleated(accept) }),
      401,
      'invalid_signature',
    )
    expectProblemShape(
      await task.decide('reject', { reason: 'other', signature: malleated(reject) }),
      401,
      'invalid_signature',
    )
    const first = await task.decide('reject', { reason, signature: reject })
    expect(first.status).toBe(200)
    for (const [decision, signature] of [
      ['reject', malleated(reject)],
      ['accept', malleated(accept)],
      ['accept', accept],
    ] as const) {
      const again = await task.decide(decision, { reason: decision === 'reject' ? reason : '', signature })
      expectProblemShape(again, 409, 'task_not_delivered')
    }
    const read = await task.read()
    expect(read).toMatchObject({ status: 'rejected', outcome: 'rejected' })
    expect(read.records).toHaveLength(1)
    // A free task's dispute is its record alone: the public profile counts disputes over money paid.
    expect(await app.profile()).toMatchObject({ completed: 0, disputes: 0 })
  })

  test('attack: long ERC-1271-style garbage, zero and truncated signatures, and a zero-address buyer_wallet decide nothing', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    await task.deliver()
    const valid = await task.sign(buyer, 'accept')
    const garbage: [string, number, string][] = [
      [`0x${'ab'.repeat(4096)}`, 401, 'invalid_signature'],
      [`0x${'00'.repeat(65)}`, 401, 'invalid_signature'],
      [`0x${'ff'.repeat(65)}`, 401, 'invalid_signature'],
      [`${valid.slice(0, -2)}${valid.endsWith('1b') ? '1c' : '1b'}`, 401, 'invalid_signature'],
      [valid.slice(0, 130), 401, 'invalid_signature'],
      [`0x${'ab'.repeat(8193)}`, 400, 'invalid_body'],
    ]
    for (const [signature, status, code] of garbage)
      expectProblemShape(await task.decide('accept', { signature }), status, code)
    // An order naming the zero address (which an ERC-6492 validator would let anything sign for) is decided by no one.
    const zero = await orderOf(app, 'reviewed', '0x0000000000000000000000000000000000000000')
    await zero.deliver()
    for (const signature of [`0x${'00'.repeat(65)}`, `0x${'ab'.repeat(200)}`, valid]) {
      const answer = await zero.decide('reject', { reason: 'x', signature })
      expect([401, 409]).toContain(answer.status)
      expectProblemShape(answer, answer.status)
    }
    expect(await task.read()).toMatchObject({ status: 'delivered', records: [] })
    expect(await zero.read()).toMatchObject({ status: 'delivered', records: [] })
  })

  test('attack: 40 concurrent accepts and rejects with valid signatures: exactly one wins, one record at most, exact counts', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    await task.deliver()
    const reason = 'not what I ordered'
    const accept = await task.sign(buyer, 'accept')
    const reject = await task.sign(buyer, 'reject', reason)
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        index % 2 === 0
          ? task.decide('accept', { signature: accept })
          : task.decide('reject', { reason, signature: reject }),
      ),
    )
    const wins = answers.filter((answer) => answer.status === 200)
    expect(wins).toHaveLength(1)
    for (const answer of answers)
      if (answer.status !== 200) expectProblemShape(answer, 409, 'task_not_delivered')
    const read = await task.read()
    const rejected = read.status === 'rejected'
    expect(read.records).toHaveLength(rejected ? 1 : 0)
    expect(await app.profile()).toMatchObject({
      completed: rejected ? 0 : 1,
      onTime: 0,
      // Free: a rejection is the task's record (counted once above), never a public dispute.
      disputes: 0,
      refunds: 0,
    })
    const kinds = await app.feedKinds()
    expect(
      kinds.filter((kind: string) => kind === 'task.completed' || kind === 'task.rejected'),
    ).toHaveLength(1)
    expect(kinds.filter((kind: string) => kind === 'task.delivered')).toHaveLength(1)
  })

  test('attack: the seller delivers twice, with another URL after delivery, or after due_at: 409 and nothing changes', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    expect((await task.deliver('https://example.com/first')).status).toBe(200)
    const before = await task.read()
    expectProblemShape(await task.deliver('https://example.com/first'), 409, 'task_not_paid')
    expectProblemShape(await task.deliver('https://evil.example/swapped'), 409, 'task_not_paid')
    expect(await task.read()).toEqual(before)
    // Concurrent deliveries of a fresh task: one lands, its URL stays.
    const raced = await orderOf(app)
    const urls = Array.from({ length: 10 }, (_, index) => `https://example.com/${index}`)
    const answers = await Promise.all(urls.map((url) => raced.deliver(url)))
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1)
    const won = urls[answers.findIndex((answer) => answer.status === 200)]
    expect((await raced.read()).result_url).toBe(won)
    // Past due_at, undelivered: overdue, before and after the sweep stores it.
    const late = await orderOf(app)
    app.clock.advance(600_000)
    expectProblemShape(await late.deliver(), 409, 'task_overdue')
    expect(await app.market.settleDueJobs()).toEqual({ late: 1, accepted: 0 })
    expectProblemShape(await late.deliver(), 409, 'task_overdue')
    expect(await late.read()).toMatchObject({ status: 'expired', outcome: 'late', delivered_at: null })
    expect(await app.profile()).toMatchObject({ onTime: 0, late: 0, completed: 0 })
  })

  test('attack: a rejection without a reason (absent, empty, blank) or with more than 1000 characters is 400 on HTTP and MCP; nothing is recorded', async () => {
    // Should happen (issue 37): a dispute needs its reason, 1-1000 characters; the 400 names /reason and says what to
    // send; the task stays delivered with no record, on /api, /api/v1 and the reject_delivery MCP tool alike.
    const app = await freeMarket()
    const task = await orderOf(app)
    await task.deliver()
    const before = await task.read()
    const refusals: Json[] = []
    // Invisible reasons too: zero-width spaces, a blank Braille pattern, the Hangul fillers (found by the independent
    // attack: only trim()'s white space counted as blank).
    const invisible = ['\u200b', '\u200b\u200b\u200b', '\u2800', '\u3164\u3164', '\u115f', '\ufeff \u00ad']
    for (const reason of [undefined, '', '   ', 'x'.repeat(1001), ...invisible]) {
      const signature = await task.sign(buyer, 'reject', reason ?? '')
      const body = { ...(reason !== undefined && { reason }), signature }
      for (const at of [task.path, task.path.replace('/api/', '/api/v1/')])
        refusals.push(await task.decide('reject', body, at))
    }
    for (const answer of refusals) {
      expectProblemShape(answer, 400, 'invalid_body')
      expect(answer.json.errors).toMatchObject([{ pointer: '/reason' }])
      expect(answer.json.errors[0].detail).toMatch(/1.1000 characters/)
      expect(answer.json.errors).toHaveLength(1)
    }
    const client = new Client({ name: 'reject-attack', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
      }),
    )
    const mcp = await client.callTool({
      name: 'reject_delivery',
      arguments: { agent: 'seller', task_id: task.id, signature: await task.sign(buyer, 'reject', '') },
    })
    expect(mcp.isError).toBe(true)
    expect(JSON.stringify(mcp)).toContain('reason')
    await client.close()
    expect(await task.read()).toEqual(before)
    expect(await app.profile()).toMatchObject({ disputes: 0 })
    // A reason of 1000 characters is a dispute, recorded as sent.
    const reason = 'r'.repeat(1000)
    const rejected = await task.decide('reject', {
      reason,
      signature: await task.sign(buyer, 'reject', reason),
    })
    expect(rejected.status).toBe(200)
    expect(rejected.json.records).toMatchObject([{ kind: 'dispute', reason }])
  })

  test("attack: a rival cannot pad or smear a buyer wallet's record: only that wallet's signed decisions count, not silence", async () => {
    // Should happen: free orders naming the victim's wallet, accepted by silence, count nothing; only the wallet's own
    // signatures (one acceptance, one rejection) move the record the seller's queue shows.
    const app = await freeMarket()
    for (let index = 0; index < 3; index++) {
      const padded = await orderOf(app)
      await padded.deliver()
    }
    app.clock.advance(2 * 3_600_000)
    expect(await app.market.settleDueJobs()).toMatchObject({ accepted: 3 })
    const accepted = await orderOf(app)
    await accepted.deliver()
    await accepted.decide('accept', { signature: await accepted.sign(buyer, 'accept') })
    const rejected = await orderOf(app)
    await rejected.deliver()
    await rejected.decide('reject', {
      reason: 'off topic',
      signature: await rejected.sign(buyer, 'reject', 'off topic'),
    })
    const strangers = await orderOf(app, 'reviewed', stranger.address)
    const unnamed = await orderOf(app, 'reviewed', null)
    const queue = (await app.call('GET', '/api/agents/seller/tasks', { key: app.seller.key })).json.tasks
    const of = (id: string) => queue.find((task: Json) => task.task_id === id).buyer_decisions
    expect(of(rejected.id)).toEqual({ wallet: buyer.address, accepted: 1, rejected: 1 })
    expect(of(strangers.id)).toEqual({ wallet: stranger.address, accepted: 0, rejected: 0 })
    expect(of(unnamed.id)).toBeNull()
  })

  test('attack: the seller shortens the review window and the SLA after the order: the order keeps its terms', async () => {
    const app = await freeMarket()
    const task = await orderOf(app)
    const updated = await app.call('PUT', '/api/agents/seller', {
      key: app.seller.key,
      body: { skills: [{ name: 'Reviewed', type: 'free', sla_seconds: 86_400, review_seconds: 0 }] },
    })
    expect(updated.status).toBe(200)
    const delivered = await task.deliver()
    expect(delivered.json).toMatchObject({ status: 'delivered', review_seconds: 3600, sla_seconds: 600 })
    const read = await task.read()
    expect(Date.parse(read.review_until) - Date.parse(read.delivered_at)).toBe(3_600_000)
    expect(Date.parse(read.due_at) - Date.parse(read.paid_at)).toBe(600_000)
  })

  test('attack: a decision whose signature check is slow (contract wallet) cannot land after review_until', async () => {
    // The buyer is a contract wallet: its signature is asked of the chain, which answers after the review closed.
    const contractBuyer = privateKeyToAccount(generatePrivateKey()).address
    let during = () => {}
    const chain: ChainReader = {
      headBlock: async () => 0n,
      receipts: async (hashes) => hashes.map(() => null),
      isValidSignature: async () => {
        during()
        return true
      },
    }
    const app = await freeMarket({ chain })
    const task = await orderOf(app, 'reviewed', contractBuyer)
    await task.deliver()
    during = () => app.clock.advance(2 * 3_600_000)
    const answer = await task.decide('reject', { reason: 'late', signature: `0x${'12'.repeat(65)}` })
    during = () => {}
    const read = await task.read()
    expect({
      status: answer.status,
      task: read.status,
      outcome: read.outcome,
      records: read.records.length,
    }).toEqual({ status: 409, task: 'completed', outcome: 'accepted_by_silence', records: 0 })
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// The job escrow on anvil.

const PRICE = 2_500_000n // 2.5 USDC
const SLA = 600
const REVIEW = 1800
const ALLOWANCE = 10n ** 12n

type Call = {
  step: string
  from: string
  to: Address
  data: Hex
  notBefore: string | null
  notAfter: string | null
}

let anvil: Anvil
let jobEscrow: Address
let chainBuyer: HDAccount
let chainBuyer2: HDAccount
let chainSeller: HDAccount
let chainStranger: HDAccount

const chainNow = async () => new Date(Number((await anvil.publicClient.getBlock()).timestamp) * 1000)

/** Moves the chain's clock by `seconds` and mines a block. */
async function wait(seconds: number) {
  await anvil.testClient.increaseTime({ seconds })
  await anvil.mine(1)
}

/**
 * A market on anvil taking fundings of `contract`, its clock the chain's, with a seller of one reviewed skill. Its
 * orders name `buyerWallet` (chainBuyer unless told; null: none), as the follower pays only a funding by the wallet
 * the order named (an unnamed order is paid by its client's verify-payment: jobFrontRunning.test.ts).
 */
async function jobMarket(
  options: { sla?: number; buyerWallet?: Address | null; startBlock?: bigint; contract?: Address } = {},
) {
  const startBlock = options.startBlock ?? (await anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
  const app = await testApp((await chainNow()).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: { jobEscrowContract: options.contract ?? jobEscrow, jobEscrowStartBlock: startBlock },
  })
  const registered = await app.register('seller', {
    skills: [
      {
        name: 'Essay',
        type: 'purchasable',
        price: '2.5',
        sla_seconds: options.sla ?? SLA,
        review_seconds: REVIEW,
      },
    ],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: registered.key,
    body: { walletAddress: chainSeller.address },
  })
  /** A new order of the essay (naming `buyerWallet`, none when null). */
  const order = async (
    buyerWallet: Address | null = options.buyerWallet === undefined
      ? chainBuyer.address
      : options.buyerWallet,
  ) => {
    const created = await app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'essay', ...(buyerWallet && { buyer_wallet: buyerWallet }) },
    })
    expect(created.status).toBe(201)
    const id: string = created.json.task_id
    const path = `/api/agents/seller/tasks/${id}`
    const read = async (): Promise<Json> => (await app.call('GET', path)).json
    const callOf = async (step: string): Promise<Call> => {
      const call = (await read()).escrow_job?.calls.find((candidate: Call) => candidate.step === step)
      if (!call) throw new Error(`the task offers no ${step} call`)
      return call
    }
    const deliver = (url = 'https://example.com/essay') =>
      app.call('POST', `${path}/complete`, { key: registered.key, body: { result_url: url } })
    /** The offered fund call with some of its arguments changed. */
    const fundWith = async (change: Partial<FundArgs>, offered?: Call) => {
      const fund = offered ?? (await callOf('fund'))
      return { to: fund.to, data: changedFundData(fund.data, change) }
    }
    return { id, path, read, callOf, deliver, fundWith }
  }
  const first = await order()
  /** Sends a call, mines the confirmations and (unless told not to) lets the follower run. */
  const send = async (
    account: HDAccount,
    call: { to: Address; data: Hex },
    follow = true,
  ): Promise<TransactionReceipt> => {
    const receipt = await anvil.sendCall(account, call, 1_000_000n)
    await anvil.mine(2)
    if (follow) await app.market.followJobEscrow()
    return receipt
  }
  const profile = async () => (await app.call('GET', '/api/community/agents/seller')).json.deliveries
  return { ...app, ...first, key: registered.key, order, send, profile, startBlock }
}

/** The JobSubmitted deliverable in a receipt. */
function deliverableOf(receipt: TransactionReceipt): Hex | null {
  for (const log of receipt.logs) {
    try {
      const event = decodeEventLog({ abi: JOB_ESCROW_ABI, data: log.data, topics: log.topics })
      if (event.eventName === 'JobSubmitted') return event.args.deliverable
    } catch {}
  }
  return null
}

const BATCH_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
contract Batch {
    function run(address[] calldata to, bytes[] calldata data) external {
        for (uint256 i = 0; i < to.length; i++) {
            (bool ok, bytes memory out) = to[i].call(data[i]);
            if (!ok) assembly { revert(add(out, 32), mload(out)) }
        }
    }
}`

/** A smart wallet's batch (ERC-4337 and Safe wallets batch calls the same way): calls in one transaction. */
async function deployBatch(from: HDAccount): Promise<Address> {
  const input = {
    language: 'Solidity',
    sources: { 'Batch.sol': { content: BATCH_SOURCE } },
    settings: { evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input)))
  const compiled = output.contracts['Batch.sol'].Batch as { abi: Abi; evm: { bytecode: { object: string } } }
  const hash = await anvil.walletFor(from).deployContract({
    abi: compiled.abi,
    bytecode: `0x${compiled.evm.bytecode.object}`,
  })
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash })
  if (!receipt.contractAddress) throw new Error('Batch deployment created no contract')
  return receipt.contractAddress
}

const BATCH_ABI = parseAbi(['function run(address[] to, bytes[] data)'])
const APPROVE_ABI = parseAbi(['function approve(address spender, uint256 amount) returns (bool)'])

describe('attacks on jobs in the job escrow (anvil)', () => {
  beforeAll(async () => {
    const chain = await paymentChain(['buyer', 'seller', 'stranger', 'buyer2'], {
      funded: ['buyer', 'stranger', 'buyer2'],
    })
    anvil = chain.anvil
    chainBuyer = chain.accounts.buyer
    chainBuyer2 = chain.accounts.buyer2
    chainSeller = chain.accounts.seller
    chainStranger = chain.accounts.stranger
    jobEscrow = getAddress((await anvil.deployJobEscrow()).address)
    for (const account of [chainBuyer, chainBuyer2, chainStranger])
      await anvil.approveUsdc(account, jobEscrow, ALLOWANCE)
  })

  afterAll(() => anvil?.stop())

  test('attack: a funding naming another provider, or a budget below the price, pays nothing', async () => {
    const market = await jobMarket()
    // (Each from its own wallet: a funding uses the job id's key of its client once and for all.)
    const other = await market.send(chainBuyer, await market.fundWith({ provider: chainStranger.address }))
    const cheap = await market.send(chainBuyer2, await market.fundWith({ budget: PRICE - 1n }))
    expect([other.status, cheap.status]).toEqual(['success', 'success'])
    expect(await market.read()).toMatchObject({
      status: 'pending_payment',
      money: 'none',
      payment: { from: null },
    })
    expect(await market.profile()).toMatchObject({ completed: 0, onTime: 0 })
    // verify-payment gives the reason.
    const verify = await verifyPayment(market, market.path, chainBuyer2, cheap.transactionHash)
    expectProblemShape(verify, 422, 'amount_mismatch')
  })

  test('attack: a funding that names the seller as evaluator is refused (else the seller accepts its own delivery)', async () => {
    const market = await jobMarket()
    const sellerBefore = await anvil.usdcOf(chainSeller.address)
    await market.send(chainBuyer, await market.fundWith({ evaluator: chainSeller.address }))
    const afterFunding = await market.read()
    let outcome: string | null = null
    if (afterFunding.status === 'paid') {
      // The exploit: the seller submits anything and accepts it itself, at once: no review by the buyer.
      await market.send(chainSeller, await market.callOf('submit'))
      const key = (await market.read()).escrow_job.key
      await market.send(chainSeller, { to: jobEscrow, data: jobStepData('complete', key) })
      outcome = (await market.read()).outcome
    }
    expect({
      afterFunding: afterFunding.status,
      evaluator: afterFunding.escrow_job?.evaluator ?? null,
      outcome,
      sellerGain: (await anvil.usdcOf(chainSeller.address)) - sellerBefore,
    }).toEqual({ afterFunding: 'pending_payment', evaluator: null, outcome: null, sellerGain: 0n })
  })

  test('attack: a funding by a wallet other than the buyer_wallet named at the order pays nothing', async () => {
    const market = await jobMarket({ buyerWallet: chainBuyer.address })
    const funding = await market.send(chainStranger, await market.callOf('fund'))
    expect(await market.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    const verify = await verifyPayment(market, market.path, chainStranger, funding.transactionHash)
    expectProblemShape(verify, 422, 'wrong_sender')
    // The named buyer still pays it.
    await market.send(chainBuyer, await market.callOf('fund'))
    expect(await market.read()).toMatchObject({ status: 'paid', payment: { from: chainBuyer.address } })
  })

  test("attack: the same job id funded by two clients: only the named buyer's funding pays the task, the other (first) counts nothing", async () => {
    const market = await jobMarket()
    const fund = await market.callOf('fund')
    // The other client funds the job id first (a copy of the buyer's call: tests/security/jobFrontRunning.test.ts).
    const other = await market.send(chainBuyer2, fund)
    expect(other.status).toBe('success')
    expect(await market.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    await market.send(chainBuyer, fund)
    const paid = await market.read()
    expect(paid).toMatchObject({ status: 'paid', payment: { from: chainBuyer.address, paid_amount: 2.5 } })
    expectProblemShape(
      await market.call('POST', `${market.path}/verify-payment`, {
        body: { tx_hash: other.transactionHash, payer_signature: `0x${'11'.repeat(65)}` },
      }),
      409,
      'task_not_pending',
    )
    // The seller delivers on both keys; only the task's job moves the task, once.
    await market.deliver()
    await market.send(chainSeller, await market.callOf('submit'))
    const otherKey = (await anvil.publicClient.readContract({
      address: jobEscrow,
      abi: JOB_ESCROW_ABI,
      functionName: 'keyOf',
      args: [chainBuyer2.address, paid.escrow_job.job_id],
    })) as Hex
    const report = await (async () => {
      await anvil.sendCall(chainSeller, { to: jobEscrow, data: jobStepData('submit', otherKey, 'x') })
      await anvil.sendCall(chainBuyer2, { to: jobEscrow, data: jobStepData('complete', otherKey) })
      await anvil.mine(2)
      return market.market.followJobEscrow()
    })()
    expect(report.applied).toBe(0)
    expect(await market.read()).toMatchObject({
      status: 'delivered',
      escrow_job: { key: paid.escrow_job.key },
    })
    expect(await market.profile()).toMatchObject({ completed: 0, onTime: 1 })
    await market.send(chainBuyer, await market.callOf('complete'))
    expect(await market.read()).toMatchObject({ status: 'completed', outcome: 'accepted' })
    expect(await market.profile()).toMatchObject({ completed: 1, onTime: 1, disputes: 0, refunds: 0 })
    const paidEvents = (await market.call('GET', '/api/feed/live')).json.events.filter(
      (event: { kind: string }) => event.kind === 'task.paid',
    )
    expect(paidEvents).toHaveLength(1)
  })

  test('attack: a funding of a task that expired unpaid pays nothing', async () => {
    const market = await jobMarket()
    const offered = await market.callOf('fund')
    market.clock.advance(25 * 3_600_000)
    const deliverBy = BigInt(Math.floor(market.clock.now().getTime() / 1000) + SLA + 3600)
    const funding = await market.send(chainBuyer, await market.fundWith({ deliverBy }, offered))
    expect(funding.status).toBe('success')
    expect(await market.read()).toMatchObject({ status: 'expired', money: 'none', payment: { from: null } })
    expectProblemShape(
      await market.call('POST', `${market.path}/verify-payment`, {
        body: { tx_hash: funding.transactionHash, payer_signature: `0x${'11'.repeat(65)}` },
      }),
      409,
      'task_expired',
    )
    await market.market.expireUnpaidTasks()
    expect((await market.store.getTask('seller', market.id))?.status).toBe('expired')
  })

  test('attack: events of another JobEscrow (same ABI, another address) are ignored by a market following the first', async () => {
    const market = await jobMarket()
    const { address: impostor } = await anvil.deployJobEscrow()
    await anvil.approveUsdc(chainBuyer, impostor, ALLOWANCE)
    const fund = await market.callOf('fund')
    const funding = await market.send(chainBuyer, { to: impostor, data: fund.data })
    expect(funding.status).toBe('success')
    expect(await market.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    const verify = await verifyPayment(market, market.path, chainBuyer, funding.transactionHash)
    expect(verify.status).toBe(422)
    expectProblemShape(verify, 422)
    // The impostor's later events for that job move nothing either.
    const key = (await anvil.publicClient.readContract({
      address: impostor,
      abi: JOB_ESCROW_ABI,
      functionName: 'keyOf',
      args: [chainBuyer.address, jobIdOf(market.id)],
    })) as Hex
    await market.send(chainSeller, { to: impostor, data: jobStepData('submit', key, 'x') })
    expect(await market.read()).toMatchObject({ status: 'pending_payment' })
    // The real funding still pays.
    await market.send(chainBuyer, fund)
    expect(await market.read()).toMatchObject({ status: 'paid', escrow_job: { contract: jobEscrow } })
  })

  test('attack: events for keys and job ids no task has are skipped and change nothing', async () => {
    const market = await jobMarket()
    const before = await market.read()
    const jobId = jobIdOf('task_00000000000000000000000000000000')
    const data = encodeFunctionData({
      abi: JOB_ESCROW_ABI,
      functionName: 'fund',
      args: [jobId, chainSeller.address, chainStranger.address, PRICE, BigInt(2 ** 40), BigInt(REVIEW)],
    })
    await market.send(chainStranger, { to: jobEscrow, data }, false)
    const key = (await anvil.publicClient.readContract({
      address: jobEscrow,
      abi: JOB_ESCROW_ABI,
      functionName: 'keyOf',
      args: [chainStranger.address, jobId],
    })) as Hex
    await market.send(chainSeller, { to: jobEscrow, data: jobStepData('submit', key, 'x') }, false)
    await market.send(chainStranger, { to: jobEscrow, data: jobStepData('reject', key, 'no') }, false)
    const report = await market.market.followJobEscrow()
    expect(report).toMatchObject({ applied: 0, skipped: 3 })
    expect(await market.read()).toEqual(before)
    expect(await market.profile()).toMatchObject({ completed: 0, onTime: 0, disputes: 0, refunds: 0 })
  })

  test('attack: the follower run again over the same blocks is a no-op (records, counts and feed unchanged)', async () => {
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'))
    await market.deliver()
    await market.send(chainSeller, await market.callOf('submit'))
    await market.send(chainBuyer, await market.callOf('reject'))
    const snapshot = async () =>
      JSON.stringify([
        await market.read(),
        await market.profile(),
        (await market.call('GET', '/api/feed/live')).json.events,
      ])
    const before = await snapshot()
    expect(JSON.parse(before)[0]).toMatchObject({ status: 'rejected', money: 'refunded' })
    // A crash lost the cursor: the whole range is read again, twice, and by two processes at once.
    const cursor = `jobEscrow:cursor:${jobEscrow.toLowerCase()}`
    await market.store.kvUpdate(cursor, () => ({ op: 'delete', result: null }))
    const again = await market.market.followJobEscrow(100_000n)
    await market.store.kvUpdate(cursor, () => ({ op: 'delete', result: null }))
    const twice = await Promise.all([
      market.market.followJobEscrow(100_000n),
      market.market.followJobEscrow(100_000n),
    ])
    expect([again.applied, ...twice.map((report) => report.applied)]).toEqual([0, 0, 0])
    expect(await snapshot()).toBe(before)
  })

  test("attack: a second market (another database) following the same contract is untouched by the first's jobs", async () => {
    const first = await jobMarket()
    const second = await jobMarket({ startBlock: first.startBlock })
    await first.send(chainBuyer, await first.callOf('fund'))
    await first.deliver()
    await first.send(chainSeller, await first.callOf('submit'))
    await first.send(chainBuyer, await first.callOf('complete'))
    const report = await second.market.followJobEscrow()
    expect(report.applied).toBe(0)
    expect(await second.read()).toMatchObject({ status: 'pending_payment', money: 'none' })
    expect(await second.profile()).toMatchObject({ completed: 0, onTime: 0 })
    expect(await first.profile()).toMatchObject({ completed: 1, onTime: 1 })
    // The first market's task id means nothing in the second.
    expectProblemShape(await second.call('GET', first.path), 404, 'task_not_found')
    await second.send(chainBuyer, await second.callOf('fund'))
    expect(await second.read()).toMatchObject({ status: 'paid' })
  })

  test('attack: verify-payment and the follower racing on one funding pay the task once, with one task.paid event', async () => {
    const market = await jobMarket()
    const funding = await market.send(chainBuyer, await market.callOf('fund'), false)
    const signature = await signPayerProof(
      chainBuyer,
      (await market.read()).payment.payer_proof,
      funding.transactionHash,
    )
    const verify = () =>
      market.call('POST', `${market.path}/verify-payment`, {
        body: { tx_hash: funding.transactionHash, payer_signature: signature },
      })
    const [a, b, c] = await Promise.all([verify(), market.market.followJobEscrow(), verify()])
    const oks = [a.status, c.status].filter((status) => status === 200).length + b.applied
    expect(oks).toBe(1)
    expect(await market.read()).toMatchObject({ status: 'paid', money: 'held' })
    const paid = (await market.call('GET', '/api/feed/live')).json.events.filter(
      (event: { kind: string }) => event.kind === 'task.paid',
    )
    expect(paid).toHaveLength(1)
  })

  test('attack: a market whose follower runs an hour late still takes a funding made at once on the offered terms', async () => {
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'), false)
    // The market was down (or its follower behind) for two hours; the funding was valid when it was made.
    market.clock.advance(2 * 3_600_000)
    await market.market.followJobEscrow()
    expect(await market.read()).toMatchObject({ status: 'paid', money: 'held' })
  })

  test('attack: a buyer sending the offered fund call an hour after ordering is not left with money locked and no task', async () => {
    const market = await jobMarket({ sla: 86_400, buyerWallet: chainBuyer.address })
    await wait(2 * 3600)
    market.clock.advance(2 * 3_600_000)
    const before = await anvil.usdcOf(chainBuyer.address)
    const shown = await market.read()
    expect(shown.status).toBe('pending_payment')
    const funding = await market.send(chainBuyer, await market.callOf('fund'))
    const after = await market.read()
    expect({
      funding: funding.status,
      task: after.status,
      locked: before - (await anvil.usdcOf(chainBuyer.address)),
    }).toEqual({ funding: 'success', task: 'paid', locked: PRICE })
  })

  test('attack: the seller delivers a job at or past deliver_by: 409 task_overdue, no result kept, no submit offered', async () => {
    // Should happen (docs/jobs.md): the contract's submit reverts from deliver_by on, so the API refuses the delivery
    // as it does outside the escrow, keeps no result and answers no call; the task stays funded for claimRefund.
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'))
    const funded = await market.read()
    const deliverBy = Date.parse(funded.escrow_job.deliver_by)
    // The chain and the market both at deliver_by (the contract's submit reverts from this second on).
    await wait(Math.ceil((deliverBy - (await chainNow()).getTime()) / 1000))
    market.clock.set(new Date(deliverBy))
    const late = await market.deliver('https://example.com/too-late')
    expectProblemShape(late, 409, 'task_overdue')
    expect(late.json.detail).toContain(funded.escrow_job.deliver_by)
    const read = await market.read()
    expect(read).toMatchObject({ status: 'paid', money: 'held' })
    expect(read.result_url).toBeUndefined()
    // Nothing kept: the view's submit commits to no result (the empty one), not the late URL.
    expect((await market.callOf('submit')).data).toBe(jobStepData('submit', funded.escrow_job.key, ''))
    // The submit the API would have answered reverts on chain.
    const submit = {
      to: jobEscrow,
      data: jobStepData('submit', funded.escrow_job.key, 'https://example.com/too-late'),
    }
    expect((await market.send(chainSeller, submit)).status).toBe('reverted')
    // Once past it, the buyer's refund.
    await wait(1)
    expect((await market.send(chainStranger, await market.callOf('claimRefund'))).status).toBe('success')
    expect(await market.read()).toMatchObject({ status: 'expired', outcome: 'late', money: 'refunded' })
  })

  test('attack: a buyer wallet that takes the result and rejects for a full refund is shown to every seller it orders from', async () => {
    // Known limit (SECURITY.md, Jobs): the escrow's buyer reads result_url and may still reject. What a seller gets:
    // each buyer wallet's signed acceptances and rejections across the market, in its queue, before it works.
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'))
    await market.deliver('https://example.com/essay')
    await market.send(chainSeller, await market.callOf('submit'))
    expect((await market.read()).result_url).toBe('https://example.com/essay')
    const before = await anvil.usdcOf(chainBuyer.address)
    await market.send(chainBuyer, await market.callOf('reject'))
    expect((await anvil.usdcOf(chainBuyer.address)) - before).toBe(PRICE)
    // The same wallet orders again (here, or from any seller of the market): the seller's queue shows its record.
    const next = await market.order(chainBuyer.address)
    const queue = (await market.call('GET', '/api/agents/seller/tasks', { key: market.key })).json.tasks
    const shown = queue.find((task: Json) => task.task_id === next.id)
    expect(shown.buyer_decisions).toEqual({ wallet: chainBuyer.address, accepted: 0, rejected: 1 })
    // Never on what the buyer reads, nor on public rows.
    expect((await next.read()).buyer_decisions).toBeUndefined()
    const history = await market.call('GET', '/api/agents/seller/tasks?status=all')
    expect(history.text).not.toContain('buyer_decisions')
  })

  test('attack: the seller cannot show a result other than the one its on-chain submit committed to', async () => {
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'))
    await market.deliver('https://example.com/committed')
    const submit = await market.callOf('submit')
    const receipt = await market.send(chainSeller, submit, false)
    // Before the follower sees the submit, the seller swaps the result it shows the buyer.
    const swapped = await market.deliver('https://evil.example/swapped')
    await market.market.followJobEscrow()
    const read = await market.read()
    expect(read.status).toBe('delivered')
    expect({ swap: swapped.status, shown: read.result_url }).toEqual({
      swap: 409,
      shown: 'https://example.com/committed',
    })
    expect(reasonHash(read.result_url)).toBe(deliverableOf(receipt) as Hex)
  })

  test('attack: a smart wallet funding two tasks in one transaction gets both paid (not one paid, one locked)', async () => {
    const batch = await deployBatch(chainBuyer)
    const market = await jobMarket({ buyerWallet: batch })
    const second = await market.order()
    await anvil.mintUsdc(batch, 2n * PRICE)
    const approve = encodeFunctionData({
      abi: APPROVE_ABI,
      functionName: 'approve',
      args: [jobEscrow, 2n * PRICE],
    })
    const fundA = await market.callOf('fund')
    const fundB = await second.callOf('fund')
    const data = encodeFunctionData({
      abi: BATCH_ABI,
      functionName: 'run',
      args: [
        [USDC_ADDRESS, jobEscrow, jobEscrow],
        [approve, fundA.data, fundB.data],
      ],
    })
    const receipt = await market.send(chainBuyer, { to: batch, data })
    expect(receipt.status).toBe('success')
    expect(await anvil.usdcOf(batch)).toBe(0n)
    expect([(await market.read()).status, (await second.read()).status]).toEqual(['paid', 'paid'])
  })

  test('attack: nothing public (feed, public history, profile) carries a task id, job id, key, buyer wallet or result', async () => {
    const market = await jobMarket()
    await market.send(chainBuyer, await market.callOf('fund'))
    await market.deliver('https://example.com/secret-result')
    await market.send(chainSeller, await market.callOf('submit'))
    await market.send(chainBuyer, await market.callOf('reject'))
    const task = await market.read()
    const published = JSON.stringify([
      (await market.call('GET', '/api/feed/live')).json,
      (await market.call('GET', '/api/agents/seller/tasks?status=all')).json,
      (await market.call('GET', '/api/community/agents/seller')).json,
    ]).toLowerCase()
    for (const secret of [
      task.task_id,
      task.escrow_job.job_id,
      task.escrow_job.key,
      chainBuyer.address,
      'secret-result',
      task.records[0].reason,
    ])
      expect(published).not.toContain(String(secret).toLowerCase())
  })
})
