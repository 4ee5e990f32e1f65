import { describe, expect, test } from 'bun:test'
import { expectProblemShape, TEST_BASE_URL, testApp } from '../testing/http.ts'

const SELLER_WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const SKILLS = [
  { name: 'Ping', type: 'free', sla: '1 minute' },
  { name: 'Deep Search', type: 'purchasable', price: '2.5', sla: '1 hour' },
]

/** An app with a seller that has a free and a paid skill and a wallet. */
async function marketWithSeller() {
  const app = await testApp()
  const seller = await app.register('seller', { skills: SKILLS, bio: 'sells' })
  await app.call('PUT', '/api/agents/seller', { key: seller.key, body: { walletAddress: SELLER_WALLET } })
  return { ...app, seller }
}

describe('POST /api/agents/{name}/tasks', () => {
  test('behavior: a paid skill starts pending_payment with payment instructions and real next-step paths', async () => {
    const { call } = await marketWithSeller()
    const created = await call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'deep-search', params: { q: 'bun' }, buyer: 'scout', buyer_email: 'buyer@example.com' },
    })
    expect(created.status).toBe(201)
    const task = created.json
    expect(task.task_id).toMatch(/^task_[0-9a-f]{32}$/)
    expect(task).toMatchObject({
      status: 'pending_payment',
      skill: 'Deep Search',
      sla: '1 hour',
      params: { q: 'bun' },
      buyer: 'scout',
      payment: {
        amount: 2.5,
        currency: 'USDC',
        chain: 'base',
        to: SELLER_WALLET,
        amount_base_units: '2500000',
      },
    })
    expect(task).not.toHaveProperty('buyer_email')
    expect(task).not.toHaveProperty('result_url')
    const self = `${TEST_BASE_URL}/api/agents/seller/tasks/${task.task_id}`
    expect(task.next_steps.verify).toBe(`POST ${self}/verify-payment`)
    expect(task.next_steps.check_status).toStartWith(`GET ${self}`)
    expect(task.next_steps.pay).toContain('2.5 USDC')
    expect(task.next_steps.pay).toContain(SELLER_WALLET)
    expect(
      JSON.parse(
        task.next_steps.verify_body
          .replace('0x<hash of your payment transaction>', '0x1')
          .replace(/0x<EIP-712 [^>]+>/, '0x2'),
      ),
    ).toEqual({ tx_hash: '0x1', payer_signature: '0x2' })
    expect(task.payment.payer_proof).toEqual({
      domain: { name: 'agentmarket', version: '1', chainId: 8453 },
      types: {
        PaymentClaim: [
          { name: 'market', type: 'string' },
          { name: 'agent', type: 'string' },
          { name: 'task', type: 'string' },
          { name: 'txHash', type: 'bytes32' },
        ],
      },
      primaryType: 'PaymentClaim',
      message: { market: TEST_BASE_URL, agent: 'seller', task: task.task_id, txHash: null },
    })
    expect(Date.parse(task.expires_at) - Date.parse(task.created_at)).toBe(24 * 60 * 60 * 1000)
    const read = await call('GET', `/api/agents/SELLER/tasks/${task.task_id}`)
    expect(read.status).toBe(200)
    expect(read.json).toEqual(task)
  })

  test('behavior: a free skill starts paid, and the seller delivers it with a result_url', async () => {
    const { call, seller } = await marketWithSeller()
    const created = await call('POST', '/api/agents/seller/tasks', { body: { skill: 'Ping' } })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ status: 'paid', payment: { amount: 0, method: 'free' } })
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    const verify = await call('POST', `${path}/verify-payment`, { body: { tx_hash: `0x${'a'.repeat(64)}` } })
    expectProblemShape(verify, 409, 'task_not_pending')

    const done = await call('POST', `${path}/complete`, {
      key: seller.key,
      body: { result_url: 'https://results.example/1' },
    })
    expect(done.status).toBe(200)
    expect(done.json).toMatchObject({ status: 'completed', result_url: 'https://results.example/1' })
    expect((await call('GET', path)).json.result_url).toBe('https://results.example/1')
    const again = await call('POST', `${path}/complete`, {
      key: seller.key,
      body: { result_url: 'https://results.example/2' },
    })
    expectProblemShape(again, 409, 'task_not_paid')
    expect((await call('GET', '/api/community/agents/seller')).json.trustScore).toBeGreaterThan(0)
  })

  test('error: bad input is a 400 pointing at the field, and creates nothing', async () => {
    const { call } = await marketWithSeller()
    const cases: [unknown, string][] = [
      [{ skill: 'Ping', buyer_email: 'not-an-email' }, '/buyer_email'],
      [{ skill: 'Ping', buyer_wallet: '0x123' }, '/buyer_wallet'],
      [{ skill: 'Ping', params: [1, 2] }, '/params'],
      [{ skill: 'Ping', params: { blob: 'x'.repeat(17 * 1024) } }, '/params'],
      [{ skill: 'Ping', tx_hash: '0xabc' }, '/tx_hash'],
      [{ skill: 'nope' }, '/skill'],
      [{}, '/skill'],
    ]
    for (const [body, pointer] of cases) {
      const refused = await call('POST', '/api/agents/seller/tasks', { body })
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(refused.json.errors[0].pointer).toBe(pointer)
    }
    const list = await call('GET', '/api/agents/seller/tasks?status=all')
    expect(list.json.total).toBe(0)
    expectProblemShape(await call('POST', '/api/agents/ghost/tasks', { body: { skill: 'Ping' } }), 404)
  })

  test('error: a paid skill of a seller without a wallet cannot be ordered', async () => {
    const { call, register } = await testApp()
    await register('walletless', { skills: SKILLS })
    const refused = await call('POST', '/api/agents/walletless/tasks', { body: { skill: 'deep-search' } })
    expectProblemShape(refused, 409, 'seller_has_no_wallet')
  })

  test('behavior: an Idempotency-Key replays the first answer; another body under the key is refused', async () => {
    const { call } = await marketWithSeller()
    const headers = { 'idempotency-key': 'order-42' }
    const body = { skill: 'deep-search', buyer: 'scout' }
    const first = await call('POST', '/api/agents/seller/tasks', { body, headers })
    const retry = await call('POST', '/api/agents/seller/tasks', { body, headers })
    expect(retry.status).toBe(201)
    expect(retry.json).toEqual(first.json)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        call('POST', '/api/agents/seller/tasks', { body, headers: { 'idempotency-key': 'race' } }),
      ),
    )
    expect(new Set(racing.map((answer) => answer.json.task_id)).size).toBe(1)
    const other = await call('POST', '/api/agents/seller/tasks', { body: { skill: 'Ping' }, headers })
    expectProblemShape(other, 409, 'idempotency_key_reused')
    const bad = await call('POST', '/api/agents/seller/tasks', { body, headers: { 'idempotency-key': 'é' } })
    expectProblemShape(bad, 400, 'invalid_idempotency_key')
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(2)
  })

  test('error: verifying needs a payment chain; without one the answer is 503 with Retry-After', async () => {
    const { call } = await marketWithSeller()
    const created = await call('POST', '/api/agents/seller/tasks', { body: { skill: 'deep-search' } })
    const path = `/api/agents/seller/tasks/${created.json.task_id}`
    const answer = await call('POST', `${path}/verify-payment`, {
      body: { tx_hash: `0x${'b'.repeat(64)}`, payer_signature: `0x${'c'.repeat(130)}` },
    })
    expectProblemShape(answer, 503, 'chain_unavailable')
    expect(answer.headers.get('retry-after')).toBe('5')
    expect((await call('GET', path)).json.status).toBe('pending_payment')
    expectProblemShape(await call('POST', `${path}/verify-payment`, { body: {} }), 400)
    expectProblemShape(
      await call('POST', `/api/agents/seller/tasks/task_${'0'.repeat(32)}/verify-payment`, {
        body: { tx_hash: `0x${'b'.repeat(64)}` },
      }),
      404,
      'task_not_found',
    )
  })
})

describe('GET /api/agents/{name}/tasks', () => {
  test('behavior: the public history shows completed tasks without ids, params, e-mails or results', async () => {
    const { call, seller } = await marketWithSeller()
    for (const n of [1, 2, 3]) {
      const created = await call('POST', '/api/agents/seller/tasks', {
        body: { skill: 'Ping', params: { n }, buyer_email: `b${n}@example.com` },
      })
      if (n < 3)
        await call('POST', `/api/agents/seller/tasks/${created.json.task_id}/complete`, {
          key: seller.key,
          body: { result_url: `https://results.example/${n}` },
        })
    }
    await call('POST', '/api/agents/seller/tasks', { body: { skill: 'deep-search' } })

    const history = await call('GET', '/api/agents/seller/tasks')
    expect(history.status).toBe(200)
    expect(history.json).toMatchObject({ total: 2, limit: 20, offset: 0 })
    for (const row of history.json.tasks) {
      expect(Object.keys(row).sort()).toEqual(
        [
          'amount',
          'chain_id',
          'completed_at',
          'created_at',
          'currency',
          'paid_at',
          'skill',
          'status',
          'tx_hash',
          'on_time',
          'refunds',
          'disputes',
        ].sort(),
      )
      expect(row.status).toBe('completed')
    }
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(4)
    expect((await call('GET', '/api/agents/seller/tasks?status=pending_payment')).json.total).toBe(1)
    expectProblemShape(await call('GET', '/api/agents/seller/tasks?status=done'), 400, 'invalid_query')

    const queue = await call('GET', '/api/agents/seller/tasks', { key: seller.key })
    expect(queue.json.total).toBe(4)
    expect(queue.json.tasks.map((task: { status: string }) => task.status)).toEqual([
      'paid',
      'pending_payment',
      'completed',
      'completed',
    ])
    expect(queue.json.tasks[0]).toMatchObject({ buyer_email: 'b3@example.com', params: { n: 3 } })
    const wrongKey = await call('GET', '/api/agents/seller/tasks', { key: 'amk_wrong' })
    expectProblemShape(wrongKey, 401)
  })

  test('behavior: task events reach the feed without ids, params or e-mails', async () => {
    const { call, seller } = await marketWithSeller()
    const created = await call('POST', '/api/agents/seller/tasks', {
      body: { skill: 'Ping', buyer_email: 'secret@example.com', params: { secret: 'p' } },
    })
    await call('POST', `/api/agents/seller/tasks/${created.json.task_id}/complete`, {
      key: seller.key,
      body: { result_url: 'https://results.example/secret' },
    })
    const feed = await call('GET', '/api/feed/live')
    const kinds = feed.json.events.map((event: { kind: string }) => event.kind)
    expect(kinds.slice(0, 2)).toEqual(['task.completed', 'task.created'])
    const text = JSON.stringify(feed.json)
    for (const secret of [created.json.task_id, 'secret@example.com', 'results.example/secret', '"p"'])
      expect(text).not.toContain(secret)
  })
})
