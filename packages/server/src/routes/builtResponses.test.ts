import { describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, type MarketplaceActions } from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { createApp } from '../app.ts'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'

/** The app over a marketplace whose paid order answers `answer` whatever it is asked. */
async function appAnswering(answer: () => Response) {
  const store = libsqlStore(await openDatabase(':memory:'))
  const market = Marketplace.create({ store, config: defaultConfig(TEST_BASE_URL) })
  const answering = Object.create(market, { orderWithPayment: { value: async () => answer() } })
  return createApp({ market: answering as MarketplaceActions, baseUrl: TEST_BASE_URL })
}

const order = () =>
  new Request(`${TEST_BASE_URL}/api/agents/seller/tasks/summary`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })

describe('a Response a route answers', () => {
  test('work: is the Response sent, not a copy, with the app headers added and its own kept', async () => {
    const built = new Response('{"status":402}', {
      status: 402,
      headers: { 'www-authenticate': 'Payment id="x"', 'referrer-policy': 'same-origin' },
    })
    const app = await appAnswering(() => built)
    const sent = await app.handle(order())
    expect(sent).toBe(built)
    expect(sent.status).toBe(402)
    expect(sent.headers.get('www-authenticate')).toBe('Payment id="x"')
    expect(sent.headers.get('referrer-policy')).toBe('same-origin')
    expect(sent.headers.get('x-content-type-options')).toBe('nosniff')
    expect(sent.headers.get('access-control-allow-origin')).toBe('*')
    expect(await sent.text()).toBe('{"status":402}')
  })

  test('behavior: a problem carries the app headers and its own, with its status', async () => {
    const { call } = await testApp()
    const missing = await call('POST', '/api/agents/nobody/tasks/summary', { body: {} })
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toBe('application/problem+json')
    expect(missing.headers.get('x-content-type-options')).toBe('nosniff')
    expect(missing.headers.get('access-control-expose-headers')).toContain('retry-after')
  })
})
