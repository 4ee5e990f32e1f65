import { describe, expect, test } from 'bun:test'
import type { X402Facilitator } from '@agentmarket/core'
import { validate } from 'mppx/discovery'
import { testApp } from '../packages/server/src/testing/http.ts'
import { scriptedTempo, TEMPO_USDC_E } from './support/tempo.ts'

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const node = scriptedTempo()
const MPP = {
  secretKey: 'discovery-test-secret-of-at-least-32-bytes',
  realm: 'localhost',
  currency: TEMPO_USDC_E,
  getClient: () => node.client('server'),
}
// Only 402 offers are made here: a payment reaching the facilitator would be a bug.
const NO_SETTLEMENT: X402Facilitator = {
  verify: () => Promise.reject(new Error('no payment is verified here')),
  settle: () => Promise.reject(new Error('no payment is settled here')),
}

/** A market with machine payments (MPP, and x402 when asked) and one seller of two paid skills. */
async function sellingMarket(x402 = false) {
  const app = await testApp(undefined, {
    mpp: MPP,
    ...(x402 ? { x402: { facilitator: NO_SETTLEMENT } } : {}),
  })
  const skills = ['Alpha', 'Beta'].map((name) => ({ name, type: 'purchasable', price: '0.5' }))
  const { key } = await app.register('seller', { skills })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: WALLET } })
  return app
}

type Operation = { 'x-payment-info'?: unknown; responses: Record<string, unknown> }

describe('MPP payment discovery: /openapi.json at the origin', () => {
  test('behavior: the discovery document has x-service-info and multi-offer x-payment-info, and mppx validates it', async () => {
    const app = await sellingMarket()
    const answer = await app.call('GET', '/openapi.json')
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toContain('application/json')
    expect(answer.headers.get('cache-control')).toBe('public, max-age=300')
    expect(answer.headers.get('access-control-allow-origin')).toBe('*')
    const document = answer.json
    expect(document['x-service-info'].docs).toMatchObject({ llms: 'http://localhost:3000/llms.txt' })
    const paid = Object.values(document.paths as Record<string, { post?: Operation }>)
      .map((item) => item.post)
      .filter((operation): operation is Operation => Boolean(operation?.['x-payment-info']))
    expect(paid.length).toBe(2)
    for (const operation of paid) {
      expect(operation['x-payment-info']).toEqual({
        offers: [
          expect.objectContaining({
            intent: 'charge',
            method: 'tempo',
            amount: '500000',
            currency: MPP.currency,
          }),
        ],
      })
      expect(operation.responses).toHaveProperty('402')
    }
    expect(validate(document).filter((problem) => problem.severity === 'error')).toEqual([])
    // The API's own document keeps the single-offer form its clients read.
    const api = (await app.call('GET', '/api/openapi.json')).json
    const path = '/api/agents/seller/tasks/alpha'
    expect(api.paths[path].post['x-payment-info']).toMatchObject({ amount: '500000', method: 'tempo' })
  })

  test("behavior: Accept-Payment that refuses MPP's tempo charge gets x402's offer alone; absent or malformed, both", async () => {
    const app = await sellingMarket(true)
    const order = (acceptPayment?: string) =>
      app.call('POST', '/api/agents/seller/tasks/alpha', {
        body: {},
        headers: acceptPayment ? { 'accept-payment': acceptPayment } : {},
      })
    for (const header of [
      undefined,
      'tempo/charge',
      'tempo/*, stripe/charge;q=0.5',
      '*/*',
      'not a header;;',
    ]) {
      const answer = await order(header)
      expect(answer.status, String(header)).toBe(402)
      expect(answer.headers.get('www-authenticate'), String(header)).toStartWith('Payment ')
      expect(answer.headers.get('payment-required'), String(header)).not.toBeNull()
    }
    for (const header of ['stripe/charge', 'tempo/charge;q=0', 'tempo/session']) {
      const answer = await order(header)
      expect(answer.status, header).toBe(402)
      expect(answer.json.code).toBe('payment_required')
      expect(answer.headers.get('www-authenticate'), header).toBeNull()
      expect(answer.headers.get('payment-required'), header).not.toBeNull()
    }
  })
})
