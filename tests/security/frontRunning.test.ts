import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Address, type Hex, keccak256, toHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { type CallAnswer, expectProblem, jsonCaller } from '../support/examples.ts'
import { signPayerProof } from '../support/payer.ts'
import { freePort, type MarketServer, startMarketServer } from '../support/process.ts'
import { type CaptureRelay, captureRelay, sendMail } from '../support/smtp.ts'

// Attack: an observer of the chain and of every public answer (no secret of the buyer) tries to make a buyer's
// transfer or escrow deposit pay a task of its own. Each test drives the attack through bun start on a real chain.

const PRICE = 2_500_000n
const MAILBOX = 'orders@market.test'
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-frontrun-'))
// Drawn just before the server starts (beforeAll): another process can take a port drawn seconds earlier.
let smtpPort = 0
let anvil: Anvil
let relay: CaptureRelay
let server: MarketServer
let call: ReturnType<typeof jsonCaller>
let escrow: Address
let victim: HDAccount
let attacker: HDAccount
let seller: HDAccount
let attackerWallet: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['victim', 'attacker', 'seller', 'attackerWallet'], {
    escrow: true,
    funded: ['victim', 'attacker'],
  })
  ;({ anvil, escrow } = chain)
  ;({ victim, attacker, seller, attackerWallet } = chain.accounts)
  relay = await captureRelay(freePort())
  smtpPort = freePort()
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: anvil.rpcUrl,
    ESCROW_CONTRACT: escrow,
    ORDER_MAILBOX: MAILBOX,
    SMTP_INBOUND_PORT: String(smtpPort),
    // Sender authentication (SPF, DKIM, DMARC) has its own test: tests/security/mailAbuse.test.ts.
    MAIL_AUTH: 'off',
    SMTP_OUTBOUND_URL: relay.url,
  })
  call = jsonCaller(server.base)
  await registerSeller('seller', seller.address, '2.5')
  await registerSeller('mallory-shop', attackerWallet.address, '0.000001')
})

afterAll(async () => {
  server?.stop()
  anvil?.stop()
  await relay?.stop()
  rmSync(folder, { recursive: true, force: true })
})

async function registerSeller(name: string, wallet: Address, price: string) {
  const registered = await call('POST', '/api/agents/register', {
    body: { name, skills: [{ name: 'Deep Search', type: 'purchasable', price }] },
  })
  await call('PUT', `/api/agents/${name}`, { key: registered.json.apiKey, body: { walletAddress: wallet } })
}

/** Orders Deep Search of `agent`; the answer and the task's path. */
async function order(agent = 'seller', extra: Record<string, unknown> = {}) {
  const created = await call('POST', `/api/agents/${agent}/tasks`, {
    body: { skill: 'deep-search', ...extra },
  })
  return { created, path: `/api/agents/${agent}/tasks/${created.json.task_id}` }
}

/** The pay-first proof of `agent`'s card (task ''), signed by `payer` for `txHash`. */
async function orderSignature(payer: HDAccount, txHash: Hex, agent = 'seller') {
  const card = await call('GET', `/api/agents/${agent}/agent-card.json`)
  return signPayerProof(payer, card.json._extensions.commerce.payer_proof, txHash)
}

/** The task's own payer_proof, signed by `payer` for `txHash`. */
async function taskSignature(payer: HDAccount, path: string, txHash: Hex) {
  const task = await call('GET', path)
  return signPayerProof(payer, task.json.payment.payer_proof, txHash)
}

const verify = (path: string, body: Record<string, unknown>) =>
  call('POST', `${path}/verify-payment`, { body })

/** Calls an MCP tool over HTTP as an MCP client would; the tool's result. */
async function mcpTool(name: string, args: Record<string, unknown>) {
  const response = await fetch(`${server.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  })
  return ((await response.json()) as { result: { isError?: boolean; content: { text: string }[] } }).result
}

const statusOf = async (path: string) => (await call('GET', path)).json.status

/** The victim's task must be untouched by the attack: same body before and after. */
const snapshot = async (path: string): Promise<CallAnswer['json']> => (await call('GET', path)).json

describe("a chain observer cannot make a buyer's card-and-verify transfer pay its task", () => {
  test('attack: ordering the same seller (bare, or naming the victim wallet) and verifying the victim hash over HTTP and MCP is refused', async () => {
    const mine = await order()
    const hash = await anvil.transferUsdc(victim, seller.address, PRICE)
    await anvil.mine(2)
    const before = await snapshot(mine.path)

    const bare = await order()
    const posing = await order('seller', { buyer_wallet: victim.address })
    for (const theirs of [bare, posing]) {
      expectProblem(await verify(theirs.path, { tx_hash: hash }), 400, 'payer_signature_required')
      const ownSignature = await taskSignature(attacker, theirs.path, hash)
      expectProblem(
        await verify(theirs.path, { tx_hash: hash, payer_signature: ownSignature }),
        422,
        'payer_signature_invalid',
      )
      // The victim's signature of its own task is public to nobody, and would not fit another task anyway.
      const victimsOtherProof = await taskSignature(victim, mine.path, hash)
      expectProblem(
        await verify(theirs.path, { tx_hash: hash, payer_signature: victimsOtherProof }),
        422,
        'payer_signature_invalid',
      )
      const viaMcp = await mcpTool('verify_payment', {
        agent: 'seller',
        task_id: theirs.created.json.task_id,
        tx_hash: hash,
        payer_signature: ownSignature,
      })
      expect(viaMcp.isError).toBe(true)
      expect(viaMcp.content[0]?.text).toContain('payer_signature_invalid')
      expect(await statusOf(theirs.path)).toBe('pending_payment')
    }
    expect(await snapshot(mine.path)).toEqual(before)

    const paid = await verify(mine.path, {
      tx_hash: hash,
      payer_signature: await taskSignature(victim, mine.path, hash),
    })
    expect(paid.status).toBe(200)
    expect(paid.json.task).toMatchObject({ status: 'paid', payment: { tx_hash: hash, from: victim.address } })
  })

  test('attack: sending the victim hash with a new order (final, or still unconfirmed and left to the background re-check) never pays the attacker', async () => {
    const hash = await anvil.transferUsdc(victim, seller.address, PRICE)
    const attackerSignature = await orderSignature(attacker, hash)
    const early = await order('seller', { tx_hash: hash, payer_signature: attackerSignature })
    expect(early.created.status).toBe(202)
    expect(early.created.json.verification).toMatchObject({ state: 'pending', rechecked: true })

    await anvil.mine(2)
    expectProblem(
      (await order('seller', { tx_hash: hash, payer_signature: attackerSignature })).created,
      422,
      'payer_signature_invalid',
    )
    // The server re-checks every second; the first re-check of a check is due 5 s after the order.
    await Bun.sleep(7_000)
    expect(await statusOf(early.path)).toBe('pending_payment')
    expect((await call('GET', early.path)).json.payment.tx_hash).toBeNull()

    const honest = await order('seller', {
      tx_hash: hash,
      payer_signature: await orderSignature(victim, hash),
    })
    expect(honest.created.status).toBe(201)
    expect(honest.created.json).toMatchObject({
      status: 'paid',
      payment: { tx_hash: hash, from: victim.address },
    })
  }, 300_000)
})

describe('a mint to the seller (Transfer from the zero address) pays no task', () => {
  // r = 0, s = 0, v = 27: no signature at all; ecrecover answers address(0) for it.
  const noSignature = `0x${'00'.repeat(64)}1b` as Hex

  test('attack: a junk signature "from" the zero address claims neither a task nor a pay-first order, and no trust', async () => {
    const before = (await call('GET', '/api/community/agents/seller')).json.trustScore
    const mint = await anvil.mintUsdc(seller.address, PRICE)
    await anvil.mine(3)
    const { path } = await order()
    const verified = await call('POST', `${path}/verify-payment`, {
      body: { tx_hash: mint, payer_signature: noSignature },
    })
    expectProblem(verified, 422, 'payer_signature_invalid')
    expect((await call('GET', path)).json.status).toBe('pending_payment')

    const mintAgain = await anvil.mintUsdc(seller.address, PRICE)
    await anvil.mine(3)
    const payFirst = await order('seller', { tx_hash: mintAgain, payer_signature: noSignature })
    expectProblem(payFirst.created, 422, 'payer_signature_invalid')
    expect((await call('GET', '/api/community/agents/seller')).json.trustScore).toBe(before)
  })
})

describe("a chain observer cannot take a buyer's escrow deposit", () => {
  async function depositFor(from: HDAccount, sellerAddress: Address, taskId: Hex, amount: bigint) {
    await anvil.approveUsdc(from, escrow, amount)
    const hash = await anvil.deposit(from, escrow, {
      taskId,
      seller: sellerAddress,
      amount,
      // A day (the SLA of a skill without sla_seconds) from now: the market refuses a deadline past that and an hour.
      slaDeadline: BigInt(Math.floor(Date.now() / 1000) + 86_400),
    })
    await anvil.mine(2)
    return hash
  }

  test("attack: ordering with the victim's deposit tx (no signature, or the attacker's) is refused; the victim's order is paid", async () => {
    const taskId = keccak256(toHex(`victim-${Math.random()}`))
    const hash = await depositFor(victim, seller.address, taskId, PRICE)
    expectProblem((await order('seller', { tx_hash: hash })).created, 400, 'payer_signature_required')
    expectProblem(
      (await order('seller', { tx_hash: hash, payer_signature: await orderSignature(attacker, hash) }))
        .created,
      422,
      'payer_signature_invalid',
    )
    const honest = await order('seller', {
      tx_hash: hash,
      payer_signature: await orderSignature(victim, hash),
    })
    expect(honest.created.status).toBe(201)
    expect(honest.created.json.payment).toMatchObject({ method: 'escrow', escrow_task_id: taskId })
  })

  test("attack: a 1-unit deposit to the attacker's own agent under the victim's taskId does not block the victim's deposit", async () => {
    const taskId = keccak256(toHex(`squatted-${Math.random()}`))
    const squat = await depositFor(attacker, attackerWallet.address, taskId, 1n)
    const squatted = await order('mallory-shop', {
      tx_hash: squat,
      payer_signature: await orderSignature(attacker, squat, 'mallory-shop'),
    })
    expect(squatted.created.status).toBe(201)

    const real = await depositFor(victim, seller.address, taskId, PRICE)
    const honest = await order('seller', {
      tx_hash: real,
      payer_signature: await orderSignature(victim, real),
    })
    expect(honest.created.status).toBe(201)
    expect(honest.created.json.payment).toMatchObject({
      method: 'escrow',
      escrow_task_id: taskId,
      paid_amount: 2.5,
    })
  })
})

describe("a chain observer cannot make an e-mail buyer's transfer pay its own mailed order", () => {
  test('attack: the attacker mails its own order and verifies the victim hash against it; only the victim task is paid', async () => {
    const mailOrder = async (from: string) => {
      const messageId = `<order-${Math.random()}@buyer.test>`
      await sendMail(smtpPort, { from, to: MAILBOX, subject: 'seller/deep-search', text: '{}', messageId })
      const reply = await relay.waitFor((email) => email.inReplyTo === messageId)
      const taskId = reply.headers.find((item) => item.key === 'x-agentmarket-task')?.value ?? ''
      expect(reply.text).toContain('payer_signature')
      return `/api/agents/seller/tasks/${taskId}`
    }
    const victimTask = await mailOrder('Victim <victim@buyer.test>')
    const hash = await anvil.transferUsdc(victim, seller.address, PRICE)
    await anvil.mine(2)
    const attackerTask = await mailOrder('Mallory <mallory@evil.test>')
    expectProblem(
      await verify(attackerTask, {
        tx_hash: hash,
        payer_signature: await taskSignature(attacker, attackerTask, hash),
      }),
      422,
      'payer_signature_invalid',
    )
    expect(await statusOf(attackerTask)).toBe('pending_payment')
    const paid = await verify(victimTask, {
      tx_hash: hash,
      payer_signature: await taskSignature(victim, victimTask, hash),
    })
    expect(paid.status).toBe(200)
  })
})
