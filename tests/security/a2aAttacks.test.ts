import { describe, expect, test } from 'bun:test'
import { memoryRateBuckets } from '@agentmarket/core'
import { rateLimiter } from '@agentmarket/core/routes'
import type { PaymentRequired } from '@x402/core/types'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { acceptsPayment, parseAcceptPayment } from '../../packages/core/src/payments/AcceptPayment.ts'
import { type TestAppOptions, testApp } from '../../packages/server/src/testing/http.ts'
import { A2A_HEADERS, order, rpc, wireMessage } from '../support/a2aClient.ts'
import { recordingFacilitator, x402AppOptions, x402ChainForSuite, x402Payer } from '../support/x402.ts'

// Attacks on the agent protocols added this session: the A2A 1.0 server (routes, handler, transports, threads), A2A's
// x402 payment round, MCP's stateless revision, the AI catalog, the registration file and MPP discovery. Each drives
// the in-process app (anvil only where money moves) and asserts the safe outcome: a test that fails is an attack that
// works. (Those once named `attack (BROKEN)` were fixed; the one todo is a known limit, see SECURITY.md.)

const PRICE = 500_000n
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const OTHER_WALLET = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
const VICTIM_EMAIL = 'victim.buyer@example.com'
const X402_STATUS = 'x402.payment.status'
const X402_REQUIRED = 'x402.payment.required'
const X402_PAYLOAD = 'x402.payment.payload'
const DAY = 24 * 60 * 60 * 1000

/** The seller's skills: a paid one with an input schema, and a free one. */
const SELLER_SKILLS = [
  {
    name: 'Deep Search',
    type: 'purchasable',
    price: '0.5',
    input: {
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
      additionalProperties: false,
    },
  },
  'Echo',
]
const OTHER_SKILLS = ['Echo', { name: 'Translate', type: 'purchasable', price: '0.5' }]

type MarketOptions = TestAppOptions & { sellerWallet?: Address; otherWallet?: Address }

/** A market where `seller` sells Deep Search (paid, schema) and Echo (free), `other` Echo and Translate (paid). */
async function market(options: MarketOptions = {}) {
  const app = await testApp('2026-06-01T12:00:00.000Z', options)
  const { key } = await app.register('seller', { skills: SELLER_SKILLS, bio: 'Finds things.' })
  await app.call('PUT', '/api/agents/seller', {
    key,
    body: { walletAddress: options.sellerWallet ?? WALLET },
  })
  const { key: otherKey } = await app.register('other', { skills: OTHER_SKILLS })
  await app.call('PUT', '/api/agents/other', {
    key: otherKey,
    body: { walletAddress: options.otherWallet ?? OTHER_WALLET },
  })
  /** How many tasks an agent holds (its own queue, read with its key). */
  const taskCount = async (agent: 'seller' | 'other') =>
    (
      await app.call('GET', `/api/agents/${agent}/tasks?status=all&limit=100`, {
        key: agent === 'seller' ? key : otherKey,
      })
    ).json.total as number
  return { ...app, key, otherKey, taskCount }
}

type Market = Awaited<ReturnType<typeof market>>

/** The a2a-x402 follow-up paying `taskId` with `payload`. */
const paymentMessage = (taskId: string, payload: unknown) =>
  wireMessage({}, { taskId, metadata: { [X402_STATUS]: 'payment-submitted', [X402_PAYLOAD]: payload } })

/** ListTasks of one conversation on `path` (the marketplace's interface by default). */
const listContext = (app: Market, contextId: string, path = '/a2a') =>
  rpc(app, path, 'ListTasks', { contextId, pageSize: 100, includeArtifacts: true })

describe('A2A: reading or joining other buyers’ orders', () => {
  test('attack: a seller takes the contextIds its A2A queue (or GetTask) shows; none of them lists the buyer’s orders with other sellers', async () => {
    // A buyer's conversation with several sellers lives on the marketplace's interface (order-skill); a thread
    // belongs to the interface it was opened on, and no answer to a seller shows it (tests/security/a2aContexts.test.ts).
    const app = await market()
    const mine = await order(app, '/a2a', {
      skill: 'order-skill',
      params: { agent: 'seller', skill: 'echo', params: { q: 'public' } },
    })
    const elsewhere = await order(
      app,
      '/a2a',
      {
        skill: 'order-skill',
        params: { agent: 'other', skill: 'echo', params: { note: 'buyer-private-note' } },
      },
      { contextId: mine.contextId },
    )
    expect(elsewhere.contextId).toBe(mine.contextId)
    // A contextId from one seller's interface does not join another seller's: a new conversation there.
    const direct = await order(app, '/a2a/agents/seller', { skill: 'echo' })
    const crossed = await order(app, '/a2a/agents/other', { skill: 'echo' }, { contextId: direct.contextId })
    expect(crossed.contextId).not.toBe(direct.contextId)
    const resultUrl = 'https://results.example/other-private.json'
    await app.call('POST', `/api/agents/other/tasks/${elsewhere.id}/complete`, {
      key: app.otherKey,
      body: { result_url: resultUrl },
    })

    // The seller (the attacker) reads only what it is entitled to: its own queue (with its key) and its own task.
    const queue = await rpc(
      app,
      '/a2a/agents/seller',
      'ListTasks',
      {},
      { authorization: `Bearer ${app.key}` },
    )
    const byGet = await rpc(app, '/a2a/agents/seller', 'GetTask', { id: mine.id })
    const contexts = new Set<string>([
      ...queue.json.result.tasks.map((task: { contextId: string }) => task.contextId),
      byGet.json.result.contextId,
    ])
    expect(contexts.has(mine.contextId)).toBe(false)
    const seen: string[] = []
    for (const contextId of contexts)
      for (const path of ['/a2a', '/a2a/agents/seller', '/a2a/agents/other'])
        seen.push((await listContext(app, contextId, path)).text)
    const leaked = seen.join('\n')
    // Another seller's order (its id is a read credential), the buyer's params for it, and its delivery.
    expect({
      otherSellersTaskId: leaked.includes(elsewhere.id),
      buyersParamsForIt: leaked.includes('buyer-private-note'),
      itsResultUrl: leaked.includes(resultUrl),
    }).toEqual({ otherSellersTaskId: false, buyersParamsForIt: false, itsResultUrl: false })
  })

  test('attack: with every contextId its queue shows, a seller adds 100 orders: none reaches the buyer’s conversation on the marketplace, and no order is ever pushed out of a list', async () => {
    const app = await market()
    const first = await order(app, '/a2a', {
      skill: 'order-skill',
      params: { agent: 'other', skill: 'echo' },
    })
    const second = await order(
      app,
      '/a2a',
      { skill: 'order-skill', params: { agent: 'seller', skill: 'echo' } },
      { contextId: first.contextId },
    )
    const queue = await rpc(
      app,
      '/a2a/agents/seller',
      'ListTasks',
      {},
      { authorization: `Bearer ${app.key}` },
    )
    const stolen = queue.json.result.tasks[0].contextId as string
    const injected: string[] = []
    for (let index = 0; index < 100; index++) {
      injected.push((await order(app, '/a2a/agents/seller', { skill: 'echo' }, { contextId: stolen })).id)
      injected.push(
        (
          await order(
            app,
            '/a2a',
            { skill: 'order-skill', params: { agent: 'seller', skill: 'echo' } },
            { contextId: stolen },
          )
        ).id,
      )
    }
    const listed = (await listContext(app, first.contextId)).json.result.tasks.map(
      (task: { id: string }) => task.id,
    )
    expect({
      buyersFirst: listed.includes(first.id),
      buyersSecond: listed.includes(second.id),
      sellersInjected: listed.filter((id: string) => injected.includes(id)).length,
    }).toEqual({ buyersFirst: true, buyersSecond: true, sellersInjected: 0 })
    // A conversation past 100 orders is not evicted from: the 101st order opens a new one.
    const own = await order(app, '/a2a/agents/seller', { skill: 'echo' })
    let contextId = own.contextId
    for (let index = 0; index < 100; index++)
      contextId = (await order(app, '/a2a/agents/seller', { skill: 'echo' }, { contextId: own.contextId }))
        .contextId
    expect(contextId).not.toBe(own.contextId)
    const full = (await listContext(app, own.contextId, '/a2a/agents/seller')).json.result.tasks
    expect(full.map((task: { id: string }) => task.id)).toContain(own.id)
  })

  test('attack: GetTask of another seller’s order (JSON-RPC and HTTP+JSON), of an HTTP order on the marketplace’s interface, re-cased or padded ids, read-task under another agent, a follow-up to a foreign task: not found, no task', async () => {
    const app = await market()
    const a2aOrder = await order(app, '/a2a/agents/seller', { skill: 'echo', params: { q: 'x' } })
    const httpOrder = (await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'echo' } })).json
    const answers = [
      await rpc(app, '/a2a/agents/other', 'GetTask', { id: a2aOrder.id }),
      await rpc(app, '/a2a/agents/other', 'GetTask', { id: httpOrder.task_id }),
      await rpc(app, '/a2a', 'GetTask', { id: httpOrder.task_id }),
      await rpc(app, '/a2a/agents/seller', 'GetTask', { id: a2aOrder.id.toUpperCase() }),
      await rpc(app, '/a2a/agents/seller', 'GetTask', { id: `${a2aOrder.id} ` }),
      await rpc(app, '/a2a/agents/other', 'SendMessage', wireMessage({}, { taskId: a2aOrder.id })),
      await rpc(
        app,
        '/a2a',
        'SendMessage',
        wireMessage({ skill: 'read-task', params: { agent: 'other', task_id: a2aOrder.id } }),
      ),
    ]
    for (const answer of answers) {
      expect(answer.json.error, answer.text).toBeDefined()
      expect(answer.text).not.toContain('"status":{"state"')
    }
    const rest = await app.call('GET', `/a2a/agents/other/rest/tasks/${a2aOrder.id}`, {
      headers: A2A_HEADERS,
    })
    expect(rest.status).toBe(404)
    const restMarket = await app.call('GET', `/a2a/rest/tasks/${httpOrder.task_id}`, { headers: A2A_HEADERS })
    expect(restMarket.status).toBe(404)
  })

  test('attack: ListTasks with a wrong key, another seller’s key, a key on the marketplace’s interface, a made-up contextId, a task id as contextId, or on another seller’s interface: no foreign task', async () => {
    const app = await market()
    const mine = await order(app, '/a2a/agents/seller', { skill: 'echo' })
    const theirs = await order(app, '/a2a/agents/other', { skill: 'echo' }, { contextId: mine.contextId })
    const httpOrder = (await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'echo' } })).json
    const refused = [
      await rpc(app, '/a2a/agents/seller', 'ListTasks', {}, { authorization: 'Bearer amk_not_a_key' }),
      await rpc(app, '/a2a/agents/seller', 'ListTasks', {}, { authorization: `Bearer ${app.otherKey}` }),
      await rpc(app, '/a2a/agents/other', 'ListTasks', {}, { authorization: `Bearer ${app.key}` }),
      await rpc(app, '/a2a', 'ListTasks', {}, { authorization: `Bearer ${app.key}` }),
      await rpc(app, '/a2a/agents/seller', 'ListTasks', {}),
    ]
    for (const answer of refused) {
      expect(answer.json.error, answer.text).toBeDefined()
      expect(answer.text).not.toContain('task_')
    }
    for (const contextId of ['x', 'default', mine.id, httpOrder.task_id, `${mine.contextId}0`]) {
      const answer = await listContext(app, contextId)
      expect(answer.json.result.tasks, contextId).toEqual([])
    }
    // A conversation belongs to the interface it was opened on: another seller's interface lists none of it (and the
    // order placed there with this contextId opened a conversation of its own).
    const onOther = await listContext(app, mine.contextId, '/a2a/agents/other')
    expect(onOther.json.result.tasks).toEqual([])
    expect(theirs.contextId).not.toBe(mine.contextId)
    const restList = await app.call('GET', `/a2a/agents/other/rest/tasks?contextId=${mine.contextId}`, {
      headers: A2A_HEADERS,
    })
    expect(restList.text).not.toContain(mine.id)
  })

  test('attack: the buyer’s e-mail leaves in no A2A answer to anyone but the seller (order, GetTask, ListTasks, read-task, errors), nor in the catalog, registration file, cards or /openapi.json', async () => {
    const { facilitator } = recordingFacilitator()
    const app = await market({ x402: { facilitator } })
    const paid = await order(app, '/a2a/agents/seller', {
      skill: 'deep-search',
      params: { q: 'x' },
      buyer_email: VICTIM_EMAIL,
    })
    const freeAnswer = await rpc(
      app,
      '/a2a',
      'SendMessage',
      wireMessage({
        skill: 'order-skill',
        params: { agent: 'seller', skill: 'echo', buyer_email: VICTIM_EMAIL },
      }),
    )
    const free = freeAnswer.json.result.task
    const texts = [
      JSON.stringify(paid),
      freeAnswer.text,
      (await rpc(app, '/a2a/agents/seller', 'GetTask', { id: paid.id })).text,
      (await rpc(app, '/a2a', 'GetTask', { id: free.id })).text,
      (await app.call('GET', `/a2a/agents/seller/rest/tasks/${paid.id}`, { headers: A2A_HEADERS })).text,
      (await listContext(app, paid.contextId)).text,
      (await listContext(app, free.contextId, '/a2a/agents/seller')).text,
      (
        await rpc(
          app,
          '/a2a',
          'SendMessage',
          wireMessage({ skill: 'read-task', params: { agent: 'seller', task_id: paid.id } }),
        )
      ).text,
      // Errors about the task: a payment of a paid task, a junk payment of the unpaid one.
      (await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(free.id, { junk: true }))).text,
      (await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(paid.id, { junk: true }))).text,
      (await app.call('GET', '/.well-known/ai-catalog.json')).text,
      (await app.call('GET', '/api/agents/seller/registration.json')).text,
      (await app.call('GET', '/api/agents/seller/.well-known/agent-card.json')).text,
      (await app.call('GET', '/.well-known/agent-card.json')).text,
      (await app.call('GET', '/openapi.json')).text,
      (await app.call('GET', '/api/agents/seller/tasks?status=all')).text,
    ]
    for (const [index, text] of texts.entries()) expect(text, `answer ${index}`).not.toContain(VICTIM_EMAIL)
    // The seller, with its key, does see it: the check above is not vacuous.
    const queue = await rpc(
      app,
      '/a2a/agents/seller',
      'ListTasks',
      {},
      { authorization: `Bearer ${app.key}` },
    )
    expect(queue.text).toContain(VICTIM_EMAIL)
  })
})

describe('A2A: orders that would skip the HTTP path’s checks', () => {
  test('attack: an unknown skill, params outside the skill’s schema, params as an array, oversize or deep params, a bad buyer_wallet or buyer_email (CRLF): refused on both bindings and by order-skill; nothing stored', async () => {
    const app = await market()
    let deep: unknown = 'x'
    for (let level = 0; level < 40; level++) deep = { a: deep }
    const bad: Record<string, unknown>[] = [
      { skill: 'nope' },
      { skill: 'deep-search', params: { q: 1 } },
      { skill: 'deep-search', params: { q: 'x', extra: true } },
      { skill: 'deep-search', params: {} },
      { skill: 'echo', params: [1, 2] },
      { skill: 'echo', params: 'text' },
      { skill: 'echo', params: { big: 'a'.repeat(20_000) } },
      { skill: 'echo', params: deep },
      { skill: 'echo', buyer_wallet: '0x1234' },
      { skill: 'echo', buyer_wallet: '0x5AAEB6053f3e94c9b9a09f33669435e7ef1beaed' },
      { skill: 'echo', buyer_email: `a@b.example\r\nBcc: ${VICTIM_EMAIL}` },
      { skill: 'echo', buyer: { not: 'a string' } },
      { skill: ['echo'] },
      { skill: { $ne: null } },
    ]
    for (const data of bad) {
      const label = JSON.stringify(data).slice(0, 80)
      const jsonRpc = await rpc(app, '/a2a/agents/seller', 'SendMessage', wireMessage(data))
      expect(jsonRpc.json.error, label).toBeDefined()
      const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
        body: wireMessage(data),
        headers: A2A_HEADERS,
      })
      expect(rest.status, label).toBeGreaterThanOrEqual(400)
      expect(rest.status, label).toBeLessThan(500)
      const viaMarket = await rpc(
        app,
        '/a2a',
        'SendMessage',
        wireMessage({ skill: 'order-skill', params: { agent: 'seller', ...data } }),
      )
      expect(viaMarket.json.error, label).toBeDefined()
    }
    // An array or text instead of a data object names no skill.
    for (const data of [[{ skill: 'echo' }], 'echo', 42, null]) {
      const answer = await rpc(app, '/a2a/agents/seller', 'SendMessage', wireMessage(data))
      expect(answer.json.error, JSON.stringify(data)).toBeDefined()
    }
    expect(await app.taskCount('seller')).toBe(0)
  })

  test('attack: a paid skill ordered as free (by name, re-cased, in metadata, with status/payment/tx_hash fields, under payment-completed metadata, through order-skill or HTTP+JSON): awaiting payment, unpaid', async () => {
    const app = await market()
    const fakeHash = `0x${'11'.repeat(32)}`
    const tries: { path: string; data: unknown; extra?: Record<string, unknown> }[] = [
      { path: '/a2a/agents/seller', data: { skill: 'Deep Search', params: { q: 'x' } } },
      { path: '/a2a/agents/seller', data: { skill: 'DEEP-SEARCH', params: { q: 'x' } } },
      { path: '/a2a/agents/seller', data: { q: 'x' }, extra: { metadata: { skill: 'deep-search' } } },
      {
        path: '/a2a/agents/seller',
        data: {
          skill: 'deep-search',
          params: { q: 'x' },
          status: 'paid',
          payment: { method: 'free' },
          tx_hash: fakeHash,
          payer_signature: `0x${'22'.repeat(65)}`,
          price: '0',
        },
      },
      {
        path: '/a2a/agents/seller',
        data: { skill: 'deep-search', params: { q: 'x' } },
        extra: {
          metadata: {
            [X402_STATUS]: 'payment-completed',
            'x402.payment.receipts': [{ success: true, transaction: fakeHash, network: 'eip155:8453' }],
          },
        },
      },
      {
        path: '/a2a',
        data: { skill: 'order-skill', params: { agent: 'SELLER', skill: 'deep-search', params: { q: 'x' } } },
      },
    ]
    for (const { path, data, extra } of tries) {
      const task = await order(app, path, data, extra)
      expect(task.status.state, JSON.stringify(data)).toBe('TASK_STATE_INPUT_REQUIRED')
      const view = (await app.call('GET', `/api/agents/seller/tasks/${task.id}`)).json
      expect(view.status).toBe('pending_payment')
      expect(view.payment.tx_hash).toBeNull()
    }
    const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
      body: wireMessage({ skill: 'deep-search', params: { q: 'x' }, status: 'paid' }),
      headers: A2A_HEADERS,
    })
    expect(rest.json.task.status.state).toBe('TASK_STATE_INPUT_REQUIRED')
  })

  test('attack: payment-submitted on a free (paid) task, an unknown or foreign task, with no payload, with a payload for another seller’s price and wallet, or after expiry: refused before the facilitator is asked', async () => {
    const { facilitator, calls } = recordingFacilitator()
    const app = await market({ x402: { facilitator } })
    const wallet = privateKeyToAccount(generatePrivateKey())
    const free = await order(app, '/a2a/agents/seller', { skill: 'echo' })
    const unpaid = await order(app, '/a2a/agents/seller', { skill: 'deep-search', params: { q: 'x' } })
    const foreign = await order(app, '/a2a/agents/other', { skill: 'translate' })
    const foreignRequired = foreign.status.message.metadata[X402_REQUIRED] as PaymentRequired
    const foreignPayload = await x402Payer(wallet).createPaymentPayload(foreignRequired)
    const ownRequired = unpaid.status.message.metadata[X402_REQUIRED] as PaymentRequired
    const ownPayload = await x402Payer(wallet).createPaymentPayload(ownRequired)

    const errors = [
      await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(free.id, ownPayload)),
      await rpc(
        app,
        '/a2a/agents/seller',
        'SendMessage',
        paymentMessage('task_00000000000000000000000000000000', ownPayload),
      ),
      await rpc(
        app,
        '/a2a',
        'SendMessage',
        paymentMessage('task_00000000000000000000000000000000', ownPayload),
      ),
      await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(foreign.id, foreignPayload)),
    ]
    for (const answer of errors) expect(answer.json.error, answer.text).toBeDefined()
    for (const payload of [undefined, null, 'x', [], { x402Version: 2 }, foreignPayload]) {
      const answer = await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(unpaid.id, payload))
      const task = answer.json.result?.task
      expect(task?.status.state, JSON.stringify(payload)?.slice(0, 60)).toBe('TASK_STATE_INPUT_REQUIRED')
      expect(task.status.message.metadata[X402_STATUS]).toBe('payment-failed')
    }
    expect(calls).toEqual([])
    // Past its expiry the order is not paid, even with the very payload it asked for.
    app.clock.advance(DAY + 60_000)
    const late = await rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(unpaid.id, ownPayload))
    expect(late.json.error?.message).toContain('task_not_pending')
    expect(calls).toEqual([])
    const view = (await app.call('GET', `/api/agents/seller/tasks/${unpaid.id}`)).json
    expect(view.status).toBe('expired')
  })
})

describe('A2A: payment inside A2A on anvil (the a2a-x402 round of a stored task)', () => {
  const x402 = x402ChainForSuite()

  const anvilMarket = (minConfirmations: number) =>
    market({ ...x402AppOptions(x402, minConfirmations), sellerWallet: x402.seller.address })

  test('attack: while an A2A payment awaits its confirmations, the task says payment-submitted (no requirements), and a second authorization is refused: the buyer pays once', async () => {
    // A settlement sent and awaiting confirmations leaves the task `pending_payment` with a pending check: asTask
    // (handler.ts:266-269) and paymentRequiredOf (x402Tasks.ts:39) still ask for payment ("payment-required", the
    // requirements, "Send 0.5 USDC …"), and payTaskWithX402 (x402Tasks.ts:61) checks the status only, so a second
    // authorization is verified and settled for the same task. The HTTP path promises never to ask twice.
    const app = await anvilMarket(3)
    const ordered = await order(app, '/a2a/agents/seller', { skill: 'deep-search', params: { q: 'x' } })
    const required = ordered.status.message.metadata[X402_REQUIRED] as PaymentRequired
    const sellerBefore = await x402.anvil.usdcOf(x402.seller.address)
    const first = await rpc(
      app,
      '/a2a/agents/seller',
      'SendMessage',
      paymentMessage(ordered.id, await x402Payer(x402.buyer).createPaymentPayload(required)),
    )
    expect(first.json.result.task.status.message.metadata[X402_STATUS]).toBe('payment-completed')
    // The buyer polls, as A2A says to; an a2a-x402 client pays whatever asks for payment.
    const polled = (await rpc(app, '/a2a/agents/seller', 'GetTask', { id: ordered.id })).json.result
    const asked = polled.status.message.metadata ?? {}
    const again = (asked[X402_REQUIRED] as PaymentRequired | undefined) ?? required
    await rpc(
      app,
      '/a2a/agents/seller',
      'SendMessage',
      paymentMessage(ordered.id, await x402Payer(x402.buyer).createPaymentPayload(again)),
    )
    expect(await x402.anvil.usdcOf(x402.seller.address)).toBe(sellerBefore + PRICE)
    expect(asked[X402_STATUS]).not.toBe('payment-required')
  })

  test('attack: two authorizations for one A2A task sent at once (a client retrying a slow answer): one is settled, one task, one transfer', async () => {
    // The claim (x402Payment.ts:89) is per authorization (payer, nonce), not per task, and payTaskWithX402
    // (x402Tasks.ts:61) reads the status before either settlement marks it: both pass and both are settled.
    const app = await anvilMarket(1)
    const ordered = await order(app, '/a2a/agents/seller', { skill: 'deep-search', params: { q: 'x' } })
    const required = ordered.status.message.metadata[X402_REQUIRED] as PaymentRequired
    const sellerBefore = await x402.anvil.usdcOf(x402.seller.address)
    const payloads = await Promise.all([
      x402Payer(x402.buyer).createPaymentPayload(required),
      x402Payer(x402.buyer).createPaymentPayload(required),
    ])
    await Promise.all(
      payloads.map((payload) =>
        rpc(app, '/a2a/agents/seller', 'SendMessage', paymentMessage(ordered.id, payload)),
      ),
    )
    const view = (await app.call('GET', `/api/agents/seller/tasks/${ordered.id}`)).json
    expect(view.status).toBe('paid')
    expect(await x402.anvil.usdcOf(x402.seller.address)).toBe(sellerBefore + PRICE)
  })
})

describe('A2A: protocol edges, paths and resources', () => {
  test('attack: a JSON-RPC batch, 0.3 method names, unknown and prototype method names, a missing or 0.3 A2A-Version, streaming, push and extended-card methods: refused, no order', async () => {
    const app = await market()
    const sendEcho = wireMessage({ skill: 'echo' })
    const batch = await app.call('POST', '/a2a/agents/seller', {
      body: Array.from({ length: 50 }, (_, id) => ({
        jsonrpc: '2.0',
        id,
        method: 'SendMessage',
        params: sendEcho,
      })),
      headers: A2A_HEADERS,
    })
    expect(batch.status).toBe(400)
    for (const method of [
      'message/send',
      'tasks/get',
      'tasks/list',
      'sendMessage',
      'SENDMESSAGE',
      '__proto__',
      'constructor',
      'toString',
      'hasOwnProperty',
      'SendStreamingMessage',
      'SubscribeToTask',
      'CreateTaskPushNotificationConfig',
      'GetExtendedAgentCard',
    ]) {
      const answer = await rpc(app, '/a2a/agents/seller', method, sendEcho)
      expect(answer.json.error, method).toBeDefined()
    }
    const versions: Record<string, string>[] = [
      {},
      { 'a2a-version': '0.3' },
      { 'a2a-version': '1.0, 0.3' },
      { 'a2a-version': '' },
    ]
    for (const headers of versions) {
      const answer = await app.call('POST', '/a2a/agents/seller', {
        body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: sendEcho },
        headers,
      })
      expect(answer.json.error, JSON.stringify(headers)).toBeDefined()
      const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', { body: sendEcho, headers })
      expect(rest.status, JSON.stringify(headers)).toBe(400)
    }
    expect(await app.taskCount('seller')).toBe(0)
  })

  test('attack: 30,000 levels of nesting in metadata and params, 5,000 parts, a 200 KB body: answered at once, nothing oversized stored', async () => {
    const app = await market()
    const nested = `${'['.repeat(30_000)}${']'.repeat(30_000)}`
    const started = performance.now()
    // Each message has its own messageId: a second message under one id would be refused as a reused id.
    const inMetadata = await app.call('POST', '/a2a/agents/seller', {
      body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"data":{"skill":"echo"}}],"metadata":{"x":${nested}}}}}`,
      headers: { ...A2A_HEADERS, 'content-type': 'application/json' },
    })
    const inParams = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
      body: `{"message":{"messageId":"m-2","role":"ROLE_USER","parts":[{"data":{"skill":"echo","params":{"x":${nested}}}}]}}`,
      headers: { ...A2A_HEADERS, 'content-type': 'application/json' },
    })
    const parts = await rpc(app, '/a2a/agents/seller', 'SendMessage', {
      message: {
        messageId: 'm-3',
        role: 'ROLE_USER',
        parts: [...Array.from({ length: 5_000 }, () => ({ text: 'x' })), { data: { skill: 'echo' } }],
      },
    })
    const huge = await rpc(
      app,
      '/a2a/agents/seller',
      'SendMessage',
      wireMessage({ skill: 'echo', x: 'a'.repeat(200_000) }),
    )
    expect(performance.now() - started).toBeLessThan(5_000)
    expect(inMetadata.status).toBe(200)
    expect(inParams.status).toBe(400)
    expect(parts.json.result.task.status.state).toBe('TASK_STATE_WORKING')
    expect(huge.status).toBe(413)
    // The nested metadata is not kept: the stored order is the data part's alone.
    const stored = (await app.call('GET', `/api/agents/seller/tasks?status=all`, { key: app.key })).json
    expect(JSON.stringify(stored).length).toBeLessThan(20_000)
  })

  test('attack: malformed percent-encoding in an A2A path (an agent name, a task id) is a client error, never a 500', async () => {
    // routes.ts:48 decodes the already decoded name again (URIError on '%'), transports.ts:106 decodes the task id
    // without a guard: the first reaches the problem handler as a fault (logged with its stack), the second the SDK's
    // INTERNAL error body. '/a2a/agents/sel%256Cer' is, by the same double decoding, an alias of 'seller'.
    const app = await market()
    const answers = [
      await app.call('POST', '/a2a/agents/%25', {
        body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } },
        headers: A2A_HEADERS,
      }),
      await app.call('GET', '/a2a/agents/seller/rest/tasks/%E0%A4%A', { headers: A2A_HEADERS }),
      await app.call('GET', '/a2a/rest/tasks/%ZZ', { headers: A2A_HEADERS }),
    ]
    for (const answer of answers) expect(answer.status, answer.text).toBeLessThan(500)
  })

  test('attack: orders through every alias (trailing slash, re-cased or encoded name, HTTP+JSON, order-skill on both marketplace bindings) spend the payment bucket; none is charged as a read', async () => {
    const limiter = rateLimiter(memoryRateBuckets(), {
      policies: { payment: { name: 'payment', limit: 3, windowSeconds: 60 } },
    })
    const app = await market({ rateLimits: { limiter, trustedProxies: 0 } })
    const echo = wireMessage({ skill: 'echo' })
    const viaMarket = wireMessage({ skill: 'order-skill', params: { agent: 'seller', skill: 'echo' } })
    const calls = [
      () =>
        app.call('POST', '/a2a/agents/seller', {
          body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: echo },
          headers: A2A_HEADERS,
        }),
      () =>
        app.call('POST', '/a2a/agents/seller/', {
          body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: echo },
          headers: A2A_HEADERS,
        }),
      () =>
        app.call('POST', '/a2a/agents/SELLER', {
          body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: echo },
          headers: A2A_HEADERS,
        }),
      () =>
        app.call('POST', '/a2a/agents/sel%6Cer', {
          body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: echo },
          headers: A2A_HEADERS,
        }),
      () => app.call('POST', '/a2a/agents/seller/rest/message:send', { body: echo, headers: A2A_HEADERS }),
      () => app.call('POST', '/a2a/agents/seller/rest/message%3Asend', { body: echo, headers: A2A_HEADERS }),
      () =>
        app.call('POST', '/a2a', {
          body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: viaMarket },
          headers: A2A_HEADERS,
        }),
      () => app.call('POST', '/a2a/rest/message:send', { body: viaMarket, headers: A2A_HEADERS }),
    ]
    let limited = 0
    for (const call of calls) if ((await call()).status === 429) limited++
    expect(await app.taskCount('seller')).toBeLessThanOrEqual(3)
    expect(limited).toBeGreaterThanOrEqual(4)
  })

  test('attack: one unpaid order of a conversation, deleted after its retention, leaves the rest of the conversation listed', async () => {
    // The purge deletes the unpaid task but not its thread entry: listing leaves such entries out.
    const app = await market()
    const kept = await order(app, '/a2a/agents/seller', { skill: 'echo' })
    // Anyone holding the contextId (the buyer, or a seller it leaked to) can add an order that is never paid.
    await order(
      app,
      '/a2a/agents/seller',
      { skill: 'deep-search', params: { q: 'x' } },
      { contextId: kept.contextId },
    )
    app.clock.advance(DAY + 60_000)
    await app.market.expireUnpaidTasks()
    app.clock.advance(8 * DAY)
    expect((await app.market.expireUnpaidTasks()).purged).toBe(1)
    const listed = await listContext(app, kept.contextId, '/a2a/agents/seller')
    expect(listed.json.error, listed.text).toBeUndefined()
    expect(listed.json.result.tasks.map((task: { id: string }) => task.id)).toEqual([kept.id])
  })

  // Known limit (SECURITY.md): the thread rows an A2A order writes (thread, thread-of, under 200 bytes each) outlive a
  // purged task; each costs an order from the payment rate limit. Not fixed yet: the purge would have to name the
  // tasks it deletes (a Store port change). Kept as a todo so it shows in every run.
  test.todo('attack (known limit): the thread rows an A2A order writes (thread, thread-of) outlive the task: unpaid orders, which are deleted after 7 days, leave storage behind for ever', async () => {
    // addToThread (threads.ts:30-35) writes `thread-of:{task}` and `thread:{context}`; nothing deletes them, while
    // expireUnpaidTasks purges the task rows. Each unpaid A2A order (the payment bucket allows 30 a minute per
    // address) leaves two rows for ever.
    const app = await market()
    const ids: { id: string; contextId: string }[] = []
    for (let index = 0; index < 20; index++)
      ids.push(
        await order(app, '/a2a/agents/seller', { skill: 'deep-search', params: { q: `spam ${index}` } }),
      )
    app.clock.advance(DAY + 60_000)
    await app.market.expireUnpaidTasks()
    app.clock.advance(8 * DAY)
    expect((await app.market.expireUnpaidTasks()).purged).toBe(20)
    const left: string[] = []
    for (const { id, contextId } of ids) {
      if ((await app.store.kvGet(`thread-of:${id}`)) !== null) left.push(`thread-of:${id}`)
      if ((await app.store.kvGet(`thread:${contextId}`)) !== null) left.push(`thread:${contextId}`)
    }
    expect(left.length, `rows left after the purge: ${left.slice(0, 4).join(', ')}, …`).toBe(0)
  })
})

describe('MCP stateless revision: the per-request context', () => {
  const REVISION = '2026-07-28'
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': REVISION,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'attacker', version: '1' },
  }
  const modernHeaders = (method: string, name?: string) => ({
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': REVISION,
    'mcp-method': method,
    ...(name ? { 'mcp-name': name } : {}),
  })

  test('attack: 60 revision-era tool calls at once, with the agent’s key, another agent’s key, a legacy-era request’s key, or none: each acts with its own request’s key only', async () => {
    const app = await market()
    const call = (key: string | undefined) =>
      app.call('POST', '/mcp', {
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'heartbeat', arguments: { agent: 'seller' }, _meta: envelope },
        },
        headers: {
          ...modernHeaders('tools/call', 'heartbeat'),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
      })
    const legacy = () =>
      app.call('POST', '/mcp', {
        body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        headers: {
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
          authorization: `Bearer ${app.key}`,
        },
      })
    const kinds = Array.from(
      { length: 60 },
      (_, index) => ['own', 'other', 'none', 'legacy'][index % 4] as string,
    )
    const answers = await Promise.all(
      kinds.map((kind) =>
        kind === 'own'
          ? call(app.key)
          : kind === 'other'
            ? call(app.otherKey)
            : kind === 'none'
              ? call(undefined)
              : legacy(),
      ),
    )
    for (const [index, kind] of kinds.entries()) {
      const answer = answers[index]
      if (!answer) continue
      if (kind === 'legacy') {
        expect(answer.status, answer.text).toBe(200)
        continue
      }
      const result = answer.json.result
      if (kind === 'own') expect(result.isError, answer.text).toBeFalsy()
      else {
        expect(result.isError, `${kind}: ${answer.text}`).toBe(true)
        expect(JSON.parse(result.content[0].text).status).toBe(kind === 'other' ? 403 : 401)
      }
    }
  })

  test('attack: subscriptions/listen on the revision holds no stream open (the server has nothing to notify)', async () => {
    const app = await market()
    const started = performance.now()
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, id) =>
        app.app.handle(
          new Request('http://localhost/mcp', {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...modernHeaders('subscriptions/listen') },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id,
              method: 'subscriptions/listen',
              params: {
                notifications: {
                  toolsListChanged: true,
                  resourceSubscriptions: ['agentmarket://guide/llms.txt'],
                },
                _meta: envelope,
              },
            }),
          }),
        ),
      ),
    )
    const bodies = await Promise.race([
      Promise.all(answers.map((answer) => answer.text())),
      Bun.sleep(3_000).then(() => null),
    ])
    expect(bodies).not.toBeNull()
    expect(performance.now() - started).toBeLessThan(3_000)
  })
})

describe('Discovery: Accept-Payment and /openapi.json', () => {
  test('attack: hostile Accept-Payment headers (8 KB of ranges, odd weights, duplicates, junk) parse in linear time, never 500, and refuse only what they name', async () => {
    const many = Array.from({ length: 800 }, (_, index) => `m${index}/i;q=0.5`).join(',')
    const hostile = [
      many,
      `${'*/*;q=0,'.repeat(900)}tempo/charge`,
      `tempo/charge;${'q=1;'.repeat(1500)}`,
      `${'a'.repeat(8000)}/b`,
      'tempo/charge;q=0;q=1',
      'tempo/charge;q=1.0001',
      'tempo/charge;q=-0',
      'tempo/charge;q=0x1',
      'TEMPO/CHARGE;Q=0',
      ' , , ',
      'tempo/charge\u0000',
    ]
    const started = performance.now()
    for (const header of hostile) {
      parseAcceptPayment(header)
      acceptsPayment(header, 'tempo', 'charge')
    }
    expect(performance.now() - started).toBeLessThan(200)
    expect(acceptsPayment('TEMPO/CHARGE;Q=0', 'tempo', 'charge')).toBe(false)
    expect(acceptsPayment('*/*;q=0, tempo/charge', 'tempo', 'charge')).toBe(true)
    expect(acceptsPayment('tempo/charge;q=1.0001', 'tempo', 'charge')).toBe(true)
    // Through an order of a paid skill (x402 taken, no MPP): a 402 with the x402 offer, never a 500.
    const { facilitator, calls } = recordingFacilitator()
    const app = await market({ x402: { facilitator } })
    for (const header of hostile.filter((value) => !value.includes('\u0000'))) {
      const answer = await app.call('POST', '/api/agents/other/tasks/translate', {
        body: {},
        headers: { 'accept-payment': header },
      })
      expect(answer.status, header.slice(0, 40)).toBe(402)
      expect(answer.headers.get('payment-required')).not.toBeNull()
    }
    expect(calls).toEqual([])
  })

  test('attack: /openapi.json, the AI catalog and the cards (public, any origin, cached) name only BASE_URL whatever Host or X-Forwarded-Host say, vary by nothing private and carry no credential', async () => {
    const app = await market()
    await order(app, '/a2a/agents/seller', { skill: 'echo', buyer_email: VICTIM_EMAIL })
    const paths = [
      '/openapi.json',
      '/.well-known/ai-catalog.json',
      '/.well-known/agent-card.json',
      '/api/agents/seller/.well-known/agent-card.json',
      '/api/agents/seller/registration.json',
    ]
    for (const path of paths) {
      const variants: Record<string, string>[] = [
        { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
        { authorization: `Bearer ${app.key}` },
        { origin: 'https://evil.example', cookie: 'session=1' },
      ]
      const answers = await Promise.all(
        variants.map(async (headers) => {
          const response = await app.app.handle(new Request(`http://evil.example${path}`, { headers }))
          return { response, text: await response.text() }
        }),
      )
      const [first] = answers
      for (const { response, text } of answers) {
        expect(response.status, path).toBe(200)
        expect(text, path).not.toContain('evil.example')
        expect(text, path).not.toContain(app.key)
        expect(text, path).not.toContain(VICTIM_EMAIL)
        expect(text, path).not.toMatch(/task_[0-9a-f]{32}/)
        expect(response.headers.get('access-control-allow-credentials'), path).toBeNull()
        // The same bytes for everyone: a shared cache serves nothing one client should not see.
        expect(text, path).toBe(first?.text ?? '')
      }
    }
  })
})
