import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import type { WebhookDelivery, WebhookRecord } from '../Webhook.ts'
import { at, type StoreTest, type WithStore } from './fixtures.ts'

/** An endpoint of `agentKey` (its own, or task `taskId`'s). */
export const hook = (id: string, agentKey = 'seller', taskId: string | null = null): WebhookRecord => ({
  id,
  agentKey,
  taskId,
  url: `https://hooks.example/${id}`,
  events: ['task.paid', 'task.completed'],
  createdAt: at(1),
  afterEventId: '0',
})

/** A delivery of feed event `eventId` to endpoint `webhookId`, due at minute `due`. */
export const delivery = (id: string, webhookId: string, eventId: string, due = 2): WebhookDelivery => ({
  id,
  webhookId,
  eventId,
  url: `https://hooks.example/${webhookId}`,
  type: 'task.paid',
  payload: `{"event":"${eventId}"}`,
  createdAt: at(2),
  attempts: 0,
  nextAttemptAt: at(due),
  deliveredAt: null,
  failedAt: null,
  lastStatus: null,
  lastError: null,
  lastLatencyMs: null,
})

/** The conformance cases of webhooks (WebhookStore): endpoints per owner, and the outbox's claims and outcomes. */
export function webhookStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: endpoints belong to their owner (the agent, or one task), up to a maximum; an event finds both kinds',
    withStore(async (store) => {
      equal(await store.insertWebhook(hook('a'), 2), true)
      equal(await store.insertWebhook(hook('b'), 2), true)
      equal(await store.insertWebhook(hook('c'), 2), false)
      equal(await store.insertWebhook(hook('t1', 'seller', 'task_1'), 2), true)
      equal(await store.insertWebhook(hook('x', 'other'), 2), true)
      same(
        (await store.listWebhooks('seller', null)).map((found) => found.id),
        ['a', 'b'],
      )
      same(await store.listWebhooks('seller', 'task_1'), [hook('t1', 'seller', 'task_1')])
      same((await store.webhooksFor('seller', 'task_1')).map((found) => found.id).sort(), ['a', 'b', 't1'])
      same((await store.webhooksFor('seller', 'task_2')).map((found) => found.id).sort(), ['a', 'b'])
      equal(await store.deleteWebhook('t1', 'seller', null), false)
      equal(await store.deleteWebhook('a', 'other', null), false)
      equal(await store.deleteWebhook('t1', 'seller', 'task_1'), true)
      equal(await store.deleteWebhook('t1', 'seller', 'task_1'), false)
    }),
  )

  test(
    'behavior: a delivery is queued once per endpoint and event, claimed under a lease, and settled once',
    withStore(async (store) => {
      await store.insertWebhook(hook('a'), 10)
      await store.enqueueDeliveries([delivery('m1', 'a', '7'), delivery('m2', 'a', '8', 5)])
      // Fanned out again (another node, a crash): nothing doubles; a deleted endpoint's delivery is dropped.
      await store.enqueueDeliveries([delivery('m3', 'a', '7'), delivery('m4', 'gone', '7')])
      const claimed = await store.claimDueDeliveries(at(3), at(10), 10)
      same(
        claimed.map((found) => [found.id, found.attempts]),
        [['m1', 1]],
      )
      same(await store.claimDueDeliveries(at(4), at(10), 10), [])
      await store.settleDelivery('m1', {
        outcome: 'retry',
        at: at(4),
        status: 503,
        error: 'the receiver answered 503',
        latencyMs: 12.4,
        nextAttemptAt: at(6),
      })
      same(
        (await store.claimDueDeliveries(at(6), at(20), 10)).map((found) => [found.id, found.attempts]),
        [
          ['m1', 2],
          ['m2', 1],
        ],
      )
      await store.settleDelivery('m1', { outcome: 'delivered', at: at(7), status: 200, latencyMs: 3 })
      await store.settleDelivery('m1', {
        outcome: 'failed',
        at: at(8),
        status: null,
        error: 'late',
        latencyMs: null,
        nextAttemptAt: null,
      })
      const [first] = (await store.listDeliveries('a', 10)).filter((found) => found.id === 'm1')
      equal(first?.deliveredAt?.getTime(), at(7).getTime())
      equal(first?.failedAt, null)
      equal(first?.lastStatus, 200)
      equal(first?.lastLatencyMs, 3)
      equal(first?.attempts, 2)
      equal((await store.listDeliveries('a', 10)).length, 2)
      equal(await store.deleteWebhook('a', 'seller', null), true)
      same(await store.listDeliveries('a', 10), [])
    }),
  )
}
