import { expect } from 'bun:test'
import type { testApp } from '../../packages/server/src/testing/http.ts'

type App = Awaited<ReturnType<typeof testApp>>

/**
 * Registers `seller` with a free skill and a webhook endpoint for task.completed on `app`; the returned `order()`
 * places and completes one free order, so each call queues one delivery.
 */
export async function sellerWithEndpoint(app: App) {
  const seller = await app.register('seller', { skills: [{ name: 'Ping', type: 'free' }] })
  const hook = await app.call('POST', '/api/agents/seller/webhooks', {
    key: seller.key,
    body: { url: 'http://127.0.0.1:9/hook', events: ['task.completed'] },
  })
  expect(hook.status).toBe(201)
  return async () => {
    const order = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'ping' } })
    expect(order.status).toBe(201)
    const done = await app.call('POST', `/api/agents/seller/tasks/${order.json.task_id}/complete`, {
      key: seller.key,
      body: { result_url: 'https://results.example/r' },
    })
    expect(done.status).toBe(200)
  }
}
