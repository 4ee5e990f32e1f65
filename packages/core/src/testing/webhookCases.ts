import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import type { FairShare } from '../FairQueue.ts'
import type { WebhookDelivery, WebhookRecord } from '../Webhook.ts'
import { at, type StoreTest, WIDE, type WithStore } from './fixtures.ts'

/** A share no case here reaches: the claim takes every due delivery. */
export { WIDE }

/** An endpoint of `agentKey` (its own, or task `taskId`'s). */
export const hook = (id: string, agentKey = 'seller', taskId: string | null = null): WebhookRecord => ({
  id,
  agentKey,
  taskId,
  url: `https://hooks.example/${id}`,
  events: ['task.paid', 'task.completed'],
  createdAt: at(1),
  afterEventId: '0',
  droppedDeliveries: 0,
  addedBy: taskId === null ? '' : `client-of-${id}`,
})

/** A delivery of feed event `eventId` to endpoint `webhookId` (of `tenant`), due at minute `due`. */
export const delivery = (
  id: string,
  webhookId: string,
  eventId: string,
  due = 2,
  tenant = 'seller:seller',
): WebhookDelivery => ({
  id,
  webhookId,
  tenant,
  eventId,
  url: `https://hooks.example/${webhookId}`,
  type: 'task.paid',
  payload: `{"event":"${eventId}"}`,
  createdAt: at(2),
  attempts: 0,
  nextAttemptAt: at(due),
  leasedUntil: null,
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
      await store.enqueueDeliveries([delivery('m1', 'a', '7'), delivery('m2', 'a', '8', 5)], 1_000)
      // Fanned out again (another node, a crash): nothing doubles; a deleted endpoint's delivery is dropped.
      await store.enqueueDeliveries([delivery('m3', 'a', '7'), delivery('m4', 'gone', '7')], 1_000)
      const claimed = await store.claimDueDeliveries(at(3), at(10), WIDE)
      same(
        claimed.map((found) => [found.id, found.attempts]),
        [['m1', 1]],
      )
      same(await store.claimDueDeliveries(at(4), at(10), WIDE), [])
      await store.settleDelivery('m1', {
        outcome: 'retry',
        at: at(4),
        status: 503,
        error: 'the receiver answered 503',
        latencyMs: 12.4,
        nextAttemptAt: at(6),
      })
      same(
        (await store.claimDueDeliveries(at(6), at(20), WIDE)).map((found) => [found.id, found.attempts]),
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

  test(
    'attack: one tenant with ten hanging endpoints and an older backlog never stands in front of another: the claim is round-robin and capped per tenant and endpoint',
    withStore(async (store) => {
      const share: FairShare = { limit: 6, perTenant: 4, perEndpoint: 2 }
      for (let index = 0; index < 10; index++) await store.insertWebhook(hook(`bad${index}`, 'bad'), 10)
      await store.insertWebhook(hook('good', 'good'), 10)
      // The attacker's 100 deliveries are all older than the honest seller's one.
      await store.enqueueDeliveries(
        Array.from({ length: 100 }, (_, index) =>
          delivery(`b${String(index).padStart(3, '0')}`, `bad${index % 10}`, String(index), 2, 'seller:bad'),
        ),
        1_000,
      )
      await store.enqueueDeliveries([delivery('g1', 'good', '500', 3, 'seller:good')], 1_000)
      const first = (await store.claimDueDeliveries(at(4), at(100), share)).map((found) => found.id)
      equal(first.includes('g1'), true, `the honest delivery waited behind the attacker's: ${first}`)
      equal(first.filter((id) => id.startsWith('b')).length, 4, 'the attacker holds its 4 slots, no more')
      // Its attempts hang (never settled): while leased, the attacker gets nothing more, the honest seller all.
      await store.enqueueDeliveries([delivery('g2', 'good', '501', 5, 'seller:good')], 1_000)
      same(
        (await store.claimDueDeliveries(at(6), at(100), share)).map((found) => found.id),
        ['g2'],
      )
      // Leases that run out (a dead process) stop counting: the attacker's next four come due, round-robin.
      const later = (await store.claimDueDeliveries(at(200), at(300), share)).map((found) => found.id)
      equal(later.filter((id) => id.startsWith('b')).length, 4)
    }),
  )

  test(
    'attack: a flood of events to one endpoint queues at most the backlog cap; the rest are counted on the endpoint, and other endpoints are untouched',
    withStore(async (store) => {
      await store.insertWebhook(hook('flooded'), 10)
      await store.insertWebhook(hook('quiet'), 10)
      await store.enqueueDeliveries(
        Array.from({ length: 8 }, (_, index) => delivery(`f${index}`, 'flooded', String(index))),
        5,
      )
      await store.enqueueDeliveries([delivery('q1', 'quiet', '0')], 5)
      equal((await store.listDeliveries('flooded', 100)).length, 5)
      equal(
        (await store.listWebhooks('seller', null)).find((found) => found.id === 'flooded')?.droppedDeliveries,
        3,
      )
      equal(
        (await store.listWebhooks('seller', null)).find((found) => found.id === 'quiet')?.droppedDeliveries,
        0,
      )
      // A delivery queued again is neither queued twice nor counted as dropped.
      await store.enqueueDeliveries([delivery('f0-again', 'flooded', '0')], 5)
      equal(
        (await store.listWebhooks('seller', null)).find((found) => found.id === 'flooded')?.droppedDeliveries,
        3,
      )
      // Settled deliveries leave the backlog: room for new ones.
      await store.settleDelivery('f0', { outcome: 'delivered', at: at(3), status: 200, latencyMs: 1 })
      await store.enqueueDeliveries([delivery('f9', 'flooded', '9')], 5)
      equal((await store.listDeliveries('flooded', 100)).length, 6)
      equal((await store.listDeliveries('quiet', 100)).length, 1)
    }),
  )
}
