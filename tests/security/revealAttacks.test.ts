import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type Task, taskStateToJSON } from '@a2a-js/sdk'
import { viemChain } from '@agentmarket/core/viem'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type Address, type Hex, keccak256, parseEventLogs, stringToHex, type TransactionReceipt } from 'viem'
import { generatePrivateKey, type HDAccount, privateKeyToAccount } from 'viem/accounts'
import { JOB_ESCROW_ABI } from '../../packages/core/src/payments/JobEscrow.ts'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'
import { type A2aBinding, appFetch, sdkClient } from '../support/a2aClient.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'

// Issue 37, mechanism 7: the escrow buyer who takes the result and rejects for a full refund. A seller whose skill says
// `reveal: "after_acceptance"` shows buyers (and everyone but itself) only the commitment to its result while the
// delivery is under review, the keccak256 of the URL, equal to the job escrow's JobSubmitted deliverable; the URL shows
// once the task is completed (accepted, or by silence), never after a rejection. Each interface a buyer reads is asked:
// HTTP (/api and /api/v1), MCP's get_task, A2A's GetTask (JSON-RPC and HTTP+JSON, through the official SDK), and the
// buyer's task webhook. Every test fails if a delivery under review or a rejected one shows its URL.

const RESULT = 'https://results.example/essay-7f3a.pdf'
const REVIEW = 1800

let anvil: Anvil
let jobEscrow: Address
let buyer: HDAccount
let seller: HDAccount
let stranger: HDAccount

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller', 'stranger'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller, stranger } = chain.accounts)
  jobEscrow = (await anvil.deployJobEscrow()).address
})
afterAll(() => anvil?.stop())

type Call = { step: string; to: Address; data: Hex; notBefore: string | null }

/** The chain's clock. */
const chainNow = async () => new Date(Number((await anvil.publicClient.getBlock()).timestamp) * 1000)

/** A market on anvil taking job escrow fundings; the seller sells one essay, revealed as `reveal` says. */
async function market(reveal?: 'after_acceptance') {
  const app = await testApp((await chainNow()).toISOString(), {
    chain: viemChain({ rpcUrl: anvil.rpcUrl, timeoutMs: 10_000 }),
    chainConfig: {
      jobEscrowContract: jobEscrow,
      jobEscrowStartBlock: await anvil.publicClient.getBlockNumber(),
    },
    webhookAllowPrivate: true,
  })
  const skill = { name: 'Essay', type: 'purchasable', price: '2.5', sla_seconds: 600, review_seconds: REVIEW }
  const { key } = await app.register('seller', { skills: [{ ...skill, ...(reveal && { reveal }) }] })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: seller.address } })
  const created = await app.call('POST', '/api/agents/seller/tasks', {
    body: { skill: 'essay', buyer_wallet: buyer.address },
  })
  expect(created.status).toBe(201)
  const id: string = created.json.task_id
  const path = `/api/agents/seller/tasks/${id}`
  const read = async () => (await app.call('GET', path)).json
  /** Sends the task's `step` call from `account`, mines the confirmations and lets the follower run. */
  const send = async (account: HDAccount, step: string): Promise<TransactionReceipt> => {
    const call = (await read()).escrow_job?.calls.find((candidate: Call) => candidate.step === step)
    if (!call) throw new Error(`the task offers no ${step} call`)
    const receipt = await anvil.sendCall(account, call, 300_000n)
    await anvil.mine(2)
    await app.market.followJobEscrow()
    return receipt
  }

  // The buyer follows its order by a task webhook: every payload it is sent is kept.
  const hooked: string[] = []
  const added = await app.call('POST', `${path}/webhooks`, { body: { url: 'http://127.0.0.1:9/buyer-hook' } })
  expect(added.status).toBe(201)
  const transport = {
    post: async (_url: string, _headers: Record<string, string>, body: string) => {
      hooked.push(body)
      return { status: 204 }
    },
  }

  const a2a = (binding: A2aBinding) => sdkClient(app, binding, 'http://localhost:3000/api/agents/seller/')
  const mcp = new McpClient({ name: 'reveal-buyer', version: '1.0.0' })
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), { fetch: appFetch(app) }),
  )

  /**
   * The task as the buyer reads it on every interface at this moment, each as the text it was answered (the webhook:
   * every payload delivered since the last look).
   */
  const buyerReads = async () => {
    const views: Record<string, { text: string; json: Record<string, unknown> }> = {}
    for (const prefix of ['/api', '/api/v1']) {
      const answer = await app.call('GET', path.replace('/api', prefix))
      views[`HTTP ${prefix}`] = { text: answer.text, json: answer.json }
    }
    const tool = await mcp.callTool({ name: 'get_task', arguments: { agent: 'seller', task_id: id } })
    views['MCP get_task'] = {
      text: JSON.stringify(tool),
      json: tool.structuredContent as Record<string, unknown>,
    }
    for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
      const task: Task = await (await a2a(binding)).getTask({ tenant: '', id, historyLength: undefined })
      views[`A2A ${binding}`] = {
        text: JSON.stringify(task),
        json: {
          state: task.status ? taskStateToJSON(task.status.state) : '',
          artifacts: task.artifacts.length,
          view: task.metadata?.agentmarket,
        },
      }
    }
    const before = hooked.length
    await app.market.fanOutWebhooks()
    await app.market.deliverWebhooks(transport)
    const payloads = hooked.slice(before)
    views['task webhook'] = {
      text: payloads.join('\n'),
      json: { tasks: payloads.map((payload) => JSON.parse(payload).data.task) },
    }
    return views
  }

  /** The seller's own queue (its key): it delivered the result and always reads it. */
  const sellerQueue = async () =>
    (await app.call('GET', '/api/agents/seller/tasks', { key })).json.tasks.find(
      (task: { task_id: string }) => task.task_id === id,
    )
  const deliver = async () => {
    const kept = await app.call('POST', `${path}/complete`, { key, body: { result_url: RESULT } })
    // Kept until the chain shows the seller's submit, which the answer offers (committing to the URL).
    expect(kept.json).toMatchObject({ status: 'paid' })
    const receipt = await send(seller, 'submit')
    const [submitted] = parseEventLogs({
      abi: JOB_ESCROW_ABI,
      eventName: 'JobSubmitted',
      logs: receipt.logs,
    })
    if (!submitted) throw new Error('no JobSubmitted in the submit receipt')
    return submitted.args.deliverable as Hex
  }
  return { ...app, id, read, send, buyerReads, sellerQueue, deliver, close: () => mcp.close() }
}

/** Asserts that no interface shows the URL and each shows the commitment (the webhook: when it was sent anything). */
function expectHidden(views: Record<string, { text: string }>, deliverable: Hex) {
  const entries = Object.entries(views)
  const leaking = entries.filter(([, { text }]) => text.includes(RESULT)).map(([via]) => via)
  expect(leaking, 'interfaces showing the result URL').toEqual([])
  const uncommitted = entries
    .filter(([via, { text }]) => !(via === 'task webhook' && text === '') && !text.includes(deliverable))
    .map(([via]) => via)
  expect(uncommitted, 'interfaces without result_commitment').toEqual([])
}

/** Asserts every interface shows the URL (the webhook: in its payloads since the last look). */
function expectRevealed(views: Record<string, { text: string }>) {
  const hiding = Object.entries(views)
    .filter(([, { text }]) => !text.includes(RESULT))
    .map(([via]) => via)
  expect(hiding, 'interfaces not showing the result URL').toEqual([])
}

/** Funds the job as the buyer, then the seller delivers: the JobSubmitted deliverable. */
async function fundedAndDelivered(app: Awaited<ReturnType<typeof market>>) {
  await app.send(buyer, 'approve')
  await app.send(buyer, 'fund')
  expect(await app.read()).toMatchObject({ status: 'paid', money: 'held' })
  return app.deliver()
}

describe('results revealed after acceptance (issue 37, mechanism 7), on anvil through every interface a buyer reads', () => {
  test('attack: the buyer reads its delivery under review on HTTP, MCP, A2A and its webhook: only the commitment, which is the escrow deliverable; accepting reveals the URL', async () => {
    const app = await market('after_acceptance')
    expect(await app.read()).toMatchObject({ reveal: 'after_acceptance' })
    const deliverable = await fundedAndDelivered(app)
    expect(deliverable).toBe(keccak256(stringToHex(RESULT)))
    const reviewing = await app.buyerReads()
    expectHidden(reviewing, deliverable)
    expect(reviewing['HTTP /api']?.json).toMatchObject({
      status: 'delivered',
      reveal: 'after_acceptance',
      result_commitment: deliverable,
    })
    expect(reviewing['HTTP /api']?.json).not.toHaveProperty('result_url')
    expect(reviewing['MCP get_task']?.json).toMatchObject({ result_commitment: deliverable })
    // A2A has no result to call completed: the buyer's decision is asked for, and no artifact is there.
    for (const binding of ['JSONRPC', 'HTTP+JSON'])
      expect(reviewing[`A2A ${binding}`]?.json).toMatchObject({
        state: 'TASK_STATE_INPUT_REQUIRED',
        artifacts: 0,
      })
    // Its webhook's payloads (task.paid and task.delivered, each the task as it stands when queued).
    const payloads = reviewing['task webhook']?.json.tasks as Record<string, unknown>[]
    expect(payloads.length).toBeGreaterThan(0)
    for (const task of payloads)
      expect(task).toMatchObject({ status: 'delivered', result_commitment: deliverable })
    // The seller's own queue keeps the URL it delivered.
    expect(await app.sellerQueue()).toMatchObject({ result_url: RESULT, result_commitment: deliverable })

    await app.send(buyer, 'complete')
    const accepted = await app.buyerReads()
    expectRevealed(accepted)
    expect(accepted['HTTP /api']?.json).toMatchObject({
      status: 'completed',
      outcome: 'accepted',
      result_url: RESULT,
      result_commitment: deliverable,
    })
    for (const binding of ['JSONRPC', 'HTTP+JSON'])
      expect(accepted[`A2A ${binding}`]?.json).toMatchObject({ state: 'TASK_STATE_COMPLETED', artifacts: 1 })
    await app.close()
  })

  test('attack: the buyer rejects for its full refund: the URL is never shown to it, before or after, on any interface', async () => {
    const app = await market('after_acceptance')
    const deliverable = await fundedAndDelivered(app)
    const reviewing = await app.buyerReads()
    expectHidden(reviewing, deliverable)
    const refundedBefore = await anvil.usdcOf(buyer.address)
    await app.send(buyer, 'reject')
    expect((await anvil.usdcOf(buyer.address)) - refundedBefore).toBe(2_500_000n)
    const rejected = await app.buyerReads()
    expectHidden(rejected, deliverable)
    expect(rejected['HTTP /api']?.json).toMatchObject({
      status: 'rejected',
      money: 'refunded',
      result_commitment: deliverable,
    })
    const rejections = rejected['task webhook']?.json.tasks as Record<string, unknown>[]
    expect(rejections.map((task) => task.status)).toEqual(['rejected'])
    // Neither does anything public (the history row, the feed) show it; the seller still reads its own result.
    const history = await app.call('GET', '/api/agents/seller/tasks?status=rejected')
    const feed = await app.call('GET', '/api/feed/live')
    for (const text of [history.text, feed.text]) expect(text.includes(RESULT)).toBe(false)
    expect(await app.sellerQueue()).toMatchObject({ status: 'rejected', result_url: RESULT })
    await app.close()
  })

  test('attack: the buyer stays silent past the review window: claimPayment completes the job and reveals the URL', async () => {
    const app = await market('after_acceptance')
    const deliverable = await fundedAndDelivered(app)
    expectHidden(await app.buyerReads(), deliverable)
    const claim = (await app.read()).escrow_job.calls.find((call: Call) => call.step === 'claimPayment')
    const seconds = Math.ceil((Date.parse(claim.notBefore) - (await chainNow()).getTime()) / 1000) + 1
    await anvil.testClient.increaseTime({ seconds })
    await anvil.mine(1)
    // Time alone decides nothing in the escrow: still under review, still hidden, until the chain says so.
    expectHidden(await app.buyerReads(), deliverable)
    await app.send(stranger, 'claimPayment')
    const silent = await app.buyerReads()
    expectRevealed(silent)
    expect(silent['HTTP /api']?.json).toMatchObject({
      status: 'completed',
      outcome: 'accepted_by_silence',
      result_url: RESULT,
    })
    await app.close()
  })

  test('behavior: a skill without reveal shows result_url on delivery as before, with no commitment field', async () => {
    const app = await market()
    await fundedAndDelivered(app)
    const delivered = await app.read()
    expect(delivered).toMatchObject({ status: 'delivered', reveal: 'on_delivery', result_url: RESULT })
    expect(delivered).not.toHaveProperty('result_commitment')
    await app.close()
  })
})

/** A market in process whose seller sells a free essay under review, revealed after acceptance, to a wallet buyer. */
async function inProcess() {
  const app = await testApp()
  const essay = { name: 'Essay', type: 'free', review_seconds: REVIEW, reveal: 'after_acceptance' }
  const { key } = await app.register('seller', { skills: [essay] })
  const wallet = privateKeyToAccount(generatePrivateKey())
  const order = async () => {
    const created = await app.call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'essay', buyer_wallet: wallet.address },
    })
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    const read = async () => (await app.call('GET', path)).json
    const deliver = () => app.call('POST', `${path}/complete`, { key, body: { result_url: RESULT } })
    const decide = async (decision: 'accept' | 'reject', reason: string) => {
      const { review } = await read()
      const signature = await wallet.signTypedData({
        ...review,
        message: { ...review.message, decision, reason },
      })
      return app.call('POST', `${path}/${decision}`, { body: { reason, signature } })
    }
    return { path, read, deliver, decide }
  }
  return { ...app, key, order }
}

describe('results revealed after acceptance outside the escrow: the API decisions and time', () => {
  test('attack: a buyer rejecting through the API never reads the URL; one accepting reads it; silence past review_until reveals it at once', async () => {
    const app = await inProcess()
    const commitment = keccak256(stringToHex(RESULT))
    const [rejecting, accepting, silent] = [await app.order(), await app.order(), await app.order()]
    for (const task of [rejecting, accepting, silent]) {
      const delivered = await task.deliver()
      // The seller's answer keeps its URL; the buyer's read of the same task shows the commitment only.
      expect(delivered.json).toMatchObject({ status: 'delivered', result_url: RESULT })
      const read = await task.read()
      expect(read).toMatchObject({ status: 'delivered', result_commitment: commitment })
      expect(read).not.toHaveProperty('result_url')
      expect(read.next_steps.check_status).toContain('result_commitment')
    }
    expect((await rejecting.decide('reject', 'took it anyway')).json).not.toHaveProperty('result_url')
    expect(await rejecting.read()).toMatchObject({ status: 'rejected', result_commitment: commitment })
    expect(JSON.stringify(await rejecting.read())).not.toContain(RESULT)
    const accepted = await accepting.decide('accept', '')
    expect(accepted.json).toMatchObject({ status: 'completed', outcome: 'accepted', result_url: RESULT })
    expect(JSON.stringify(await silent.read())).not.toContain(RESULT)
    app.clock.advance(REVIEW * 1000)
    expect(await silent.read()).toMatchObject({
      status: 'completed',
      outcome: 'accepted_by_silence',
      result_url: RESULT,
      result_commitment: commitment,
    })
  })

  test('behavior: an order keeps the reveal it was placed under: the seller dropping it later reveals nothing early', async () => {
    const app = await inProcess()
    const task = await app.order()
    const changed = await app.call('PUT', '/api/agents/seller', {
      key: app.key,
      body: { skills: [{ name: 'Essay', type: 'free', review_seconds: REVIEW }] },
    })
    expect(changed.json.skills[0]).toMatchObject({ reveal: 'on_delivery' })
    await task.deliver()
    expect(await task.read()).toMatchObject({ status: 'delivered', reveal: 'after_acceptance' })
    expect(JSON.stringify(await task.read())).not.toContain(RESULT)
    // And the other way: a new order under the changed skill shows its result on delivery, as before.
    const later = await app.order()
    await later.deliver()
    expect(await later.read()).toMatchObject({ reveal: 'on_delivery', result_url: RESULT })
  })

  test('error: a reveal after acceptance without a review window, or an unknown reveal, is a 400 at the field; nothing registered', async () => {
    const app = await testApp()
    for (const skill of [
      { name: 'Essay', type: 'free', reveal: 'after_acceptance' },
      { name: 'Essay', type: 'free', review_seconds: 0, reveal: 'after_acceptance' },
      { name: 'Essay', type: 'free', review_seconds: 60, reveal: 'never' },
    ]) {
      const answer = await app.call('POST', '/api/agents/register', {
        body: { name: 'careful', skills: [skill] },
      })
      expectProblemShape(answer, 400, 'invalid_body')
      expect(answer.json.errors).toMatchObject([{ pointer: '/skills/0/reveal' }])
    }
    expect((await app.call('GET', '/api/community/agents/careful')).status).toBe(404)
  })
})
