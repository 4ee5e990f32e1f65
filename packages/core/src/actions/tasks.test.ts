import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { MarketError } from '../errors.ts'
import { Marketplace } from '../Marketplace.ts'

const WALLET = '0x1111111111111111111111111111111111111111'

/** A market on memoryStore (no chain) with a seller of a free and a paid skill. */
async function sellerMarket() {
  const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('https://m.example') })
  const { apiKey } = await market.registerAgent({
    name: 'seller',
    skills: ['Echo', { name: 'Report', type: 'purchasable', price: 1.5 }],
  })
  await market.updateAgent('seller', apiKey, { walletAddress: WALLET })
  return { market, apiKey }
}

/** The MarketError a call fails with. */
async function failure(call: Promise<unknown>): Promise<MarketError> {
  const error = await call.then(
    () => null,
    (thrown: unknown) => thrown,
  )
  expect(error).toBeInstanceOf(MarketError)
  return error as MarketError
}

describe('task actions on memoryStore', () => {
  test('behavior: a free order is created paid (201), read by its buyer, delivered by the seller and listed in history', async () => {
    const { market, apiKey } = await sellerMarket()
    const answer = await market.createTask('seller', { skill: 'echo' })
    expect(answer.outcome).toBe('created')
    expect(answer.status).toBe(201)
    const id = (answer.body as { task_id: string }).task_id
    expect((await market.getTask('SELLER', id)).status).toBe('paid')
    const done = await market.completeTask('seller', id, apiKey, { result_url: 'https://r.example/1' })
    expect(done.status).toBe('completed')
    const history = await market.listTasks('seller', undefined, {})
    expect(history.total).toBe(1)
  })

  test('behavior: a paid order is created pending_payment with the seller wallet to pay', async () => {
    const { market } = await sellerMarket()
    const answer = await market.createTask('seller', { skill: 'report' })
    expect(answer).toMatchObject({
      outcome: 'created',
      status: 201,
      body: { status: 'pending_payment', payment: { to: WALLET } },
    })
  })

  test('behavior: an Idempotency-Key replays the first answer to the same client and body; another body is 409', async () => {
    const { market, apiKey } = await sellerMarket()
    const options = { idempotencyKey: 'order-1', client: '198.51.100.1' }
    const first = await market.createTask('seller', { skill: 'echo' }, options)
    const again = await market.createTask('seller', { skill: 'echo' }, options)
    expect(again).toMatchObject({
      outcome: 'replayed',
      status: 201,
      replayed: true,
      body: first.body as object,
    })
    expect((await failure(market.createTask('seller', { skill: 'report' }, options))).code).toBe(
      'idempotency_key_reused',
    )
    const stranger = await market.createTask(
      'seller',
      { skill: 'echo' },
      { ...options, client: '203.0.113.9' },
    )
    expect(stranger.outcome).toBe('created')
    expect((await market.listTasks('seller', apiKey, {})).total).toBe(2)
  })

  test('error: a tx_hash without payer_signature is 400 and stores nothing; without a chain, a verification is 503', async () => {
    const { market, apiKey } = await sellerMarket()
    const txHash = `0x${'ab'.repeat(32)}`
    const refused = await failure(market.createTask('seller', { skill: 'report', tx_hash: txHash }))
    expect(refused.code).toBe('payer_signature_required')
    expect((await market.listTasks('seller', apiKey, {})).total).toBe(0)
    const { body } = await market.createTask('seller', { skill: 'report' })
    const id = (body as { task_id: string }).task_id
    const signature = `0x${'cd'.repeat(65)}`
    const down = await failure(
      market.verifyPayment('seller', id, { tx_hash: txHash, payer_signature: signature }),
    )
    expect([down.code, down.status]).toEqual(['chain_unavailable', 503])
    expect((await market.getTask('seller', id)).status).toBe('pending_payment')
  })

  test('error: completing an unpaid task is 409 task_not_paid; another agent cannot complete it (403)', async () => {
    const { market, apiKey } = await sellerMarket()
    const other = await market.registerAgent({ name: 'other' })
    const { body } = await market.createTask('seller', { skill: 'report' })
    const id = (body as { task_id: string }).task_id
    const unpaid = await failure(
      market.completeTask('seller', id, apiKey, { result_url: 'https://r.example' }),
    )
    expect(unpaid.code).toBe('task_not_paid')
    const stranger = await failure(
      market.completeTask('seller', id, other.apiKey, { result_url: 'https://r.example' }),
    )
    expect(stranger.status).toBe(403)
  })
})
