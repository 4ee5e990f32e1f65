import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import { type FairShare, pickFair } from '../FairQueue.ts'
import type { Store } from '../ports/Store.ts'
import type { WebhookDelivery, WebhookRecord } from '../Webhook.ts'
import { at, type StoreTest, type WithStore } from './fixtures.ts'

/** A share no case here reaches: the claim takes every due delivery. */
export const WIDE: FairShare = { limit: 100, perTenant: 100, perEndpoint: 100 }

/** A small deterministic generator (mulberry32): the same cases on every store and every run. */
function seeded(seed: number): (below: number) => number {
  let state = seed >>> 0
  return (below) => {
    state = (state + 0x6d2b79f5) >>> 0
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state)
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)
    return Math.floor((((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296) * below)
  }
}

/** Every delivery the store keeps for `endpoints`, read through the port. */
async function everyDelivery(store: Store, endpoints: string[]): Promise<WebhookDelivery[]> {
  return (await Promise.all(endpoints.map((id) => store.listDeliveries(id, 10_000)))).flat()
}

/** What pickFair would claim at `now` from the store's deliveries (the reference the store must match). */
function expectedClaim(all: WebhookDelivery[], now: Date, share: FairShare): string[] {
  const pending = all.filter((found) => !found.deliveredAt && !found.failedAt)
  const item = (found: WebhookDelivery) => ({
    id: found.id,
    tenant: found.tenant,
    endpoint: found.webhookId,
    dueAt: found.nextAttemptAt.getTime(),
  })
  const inFlight = pending.filter((found) => (found.leasedUntil?.getTime() ?? 0) > now.getTime()).map(item)
  const due = pending.filter((found) => found.nextAttemptAt <= now).map(item)
  return pickFair(due, inFlight, share)
}

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
      await store.enqueueDeliveries([delivery('m1', 'a', '7'), delivery('m2', 'a', '8', 5)])
      // Fanned out again (another node, a crash): nothing doubles; a deleted endpoint's delivery is dropped.
      await store.enqueueDeliveries([delivery('m3', 'a', '7'), delivery('m4', 'gone', '7')])
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
      )
      await store.enqueueDeliveries([delivery('g1', 'good', '500', 3, 'seller:good')])
      const first = (await store.claimDueDeliveries(at(4), at(100), share)).map((found) => found.id)
      equal(first.includes('g1'), true, `the honest delivery waited behind the attacker's: ${first}`)
      equal(first.filter((id) => id.startsWith('b')).length, 4, 'the attacker holds its 4 slots, no more')
      // Its attempts hang (never settled): while leased, the attacker gets nothing more, the honest seller all.
      await store.enqueueDeliveries([delivery('g2', 'good', '501', 5, 'seller:good')])
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
    'property: every claim takes exactly what the core policy (pickFair) picks, over random tenants, endpoints, due times, leases and outcomes',
    withStore(async (store) => {
      const next = seeded(37)
      const endpoints = Array.from({ length: 8 }, (_, index) => `e${index}`)
      for (const [index, id] of endpoints.entries()) await store.insertWebhook(hook(id, `t${index % 3}`), 10)
      let made = 0
      for (let round = 0; round < 12; round++) {
        const now = at(10 * round + 5)
        const batch = Array.from({ length: next(12) }, () => {
          const endpoint = next(endpoints.length)
          made += 1
          return delivery(
            `d${String(made).padStart(4, '0')}`,
            `e${endpoint}`,
            String(made),
            10 * round + next(6),
            `seller:t${endpoint % 3}`,
          )
        })
        await store.enqueueDeliveries(batch)
        const share = { limit: 1 + next(8), perTenant: 1 + next(4), perEndpoint: 1 + next(3) }
        const want = expectedClaim(await everyDelivery(store, endpoints), now, share).sort()
        const got = await store.claimDueDeliveries(now, at(10 * round + 5 + next(25)), share)
        same(got.map((found) => found.id).sort(), want, `round ${round}`)
        for (const claimed of got) {
          const roll = next(3)
          if (roll === 0) continue // still hanging
          await store.settleDelivery(
            claimed.id,
            roll === 1
              ? { outcome: 'delivered', at: now, status: 200, latencyMs: 1 }
              : {
                  outcome: 'retry',
                  at: now,
                  status: null,
                  error: 'no answer',
                  latencyMs: null,
                  nextAttemptAt: at(10 * round + 5 + next(20)),
                },
          )
        }
      }
    }),
  )
}
