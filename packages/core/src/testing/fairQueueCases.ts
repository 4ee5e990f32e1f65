import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import { claimFair, type FairQueued, type FairShare } from '../FairQueue.ts'
import { mailQueueKeys, type OutboxEntry } from '../OrderMail.ts'
import { recheckQueueKeys } from '../PaymentRechecks.ts'
import type { Store } from '../ports/Store.ts'
import { at, hex32, type StoreTest, sampleAgent, sampleTask, type WithStore } from './fixtures.ts'
import { delivery, hook } from './webhookCases.ts'

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

/** How an attempt ended, as the cases settle it: done (sent, delivered, paid) or to be retried at a time. */
type Settled = { done: true } | { done: false; retryAt: Date }

/**
 * One queue that claims by the fair policy, driven through the Store port: what the cases queue, claim and settle.
 * `enqueue` answers the tenant and endpoint the store files the item under (FairQueue.ts), which the model follows.
 */
type QueueUnderTest = {
  name: string
  /** Prepares `tenants` x `endpoints` (agents, webhook endpoints) before anything is queued. */
  setup(store: Store, tenants: number, endpoints: number): Promise<void>
  enqueue(
    store: Store,
    id: string,
    tenant: number,
    endpoint: number,
    dueAt: Date,
  ): Promise<{ tenant: string; endpoint: string }>
  claim(store: Store, now: Date, leaseUntil: Date, share: FairShare): Promise<string[]>
  settle(store: Store, id: string, settled: Settled, now: Date): Promise<void>
}

/** An outbox entry to `to`, due at `dueAt`. */
function mailTo(id: string, to: string, dueAt: Date): OutboxEntry {
  return {
    id,
    mail: {
      from: 'orders@market.example',
      to,
      subject: 'Re: ping',
      text: `reply ${id}`,
      messageId: `<${id}@market.example>`,
      inReplyTo: null,
      references: [],
      headers: {},
    },
    createdAt: at(0),
    attempts: 0,
    nextAttemptAt: dueAt,
    leasedUntil: null,
    sentAt: null,
    failedAt: null,
    lastError: null,
  }
}

const webhookQueue: QueueUnderTest = {
  name: 'webhook deliveries (tenant: the endpoint owner, endpoint: the endpoint)',
  async setup(store, tenants, endpoints) {
    for (let index = 0; index < endpoints; index++)
      await store.insertWebhook(hook(`e${index}`, `t${index % tenants}`), 100)
  },
  async enqueue(store, id, _tenant, endpoint, dueAt) {
    // An endpoint has one owner: the tenant is the endpoint's.
    const keys = { tenant: `seller:t${endpoint % 3}`, endpoint: `e${endpoint}` }
    await store.enqueueDeliveries(
      [{ ...delivery(id, keys.endpoint, id, 0, keys.tenant), nextAttemptAt: dueAt }],
      1_000,
    )
    return keys
  },
  async claim(store, now, leaseUntil, share) {
    return (await store.claimDueDeliveries(now, leaseUntil, share)).map((found) => found.id)
  },
  async settle(store, id, settled, now) {
    await store.settleDelivery(
      id,
      settled.done
        ? { outcome: 'delivered', at: now, status: 200, latencyMs: 1 }
        : {
            outcome: 'retry',
            at: now,
            status: null,
            error: 'no answer',
            latencyMs: null,
            nextAttemptAt: settled.retryAt,
          },
    )
  },
}

const mailQueue: QueueUnderTest = {
  name: 'outgoing mail (tenant: the recipient, endpoint: its domain)',
  async setup() {},
  async enqueue(store, id, tenant, endpoint, dueAt) {
    const to = `Buyer${tenant}@Domain${endpoint}.example`
    await store.acceptOrderMail({
      key: id,
      receivedAt: at(0),
      task: null,
      events: [],
      reply: mailTo(id, to, dueAt),
    })
    return mailQueueKeys(to)
  },
  async claim(store, now, leaseUntil, share) {
    return (await store.claimDueMail(now, leaseUntil, share)).map((found) => found.id)
  },
  async settle(store, id, settled, now) {
    await store.settleMail(
      id,
      settled.done
        ? { outcome: 'sent', at: now }
        : { outcome: 'retry', at: now, error: 'connection timed out', nextAttemptAt: settled.retryAt },
    )
  },
}

let checks = 0
const recheckQueue: QueueUnderTest = {
  name: 'payment re-checks (tenant: the seller, endpoint: the client)',
  async setup(store, tenants) {
    for (let index = 0; index < tenants; index++)
      await store.insertAgent(sampleAgent({ name: `seller-${index}` }), [])
  },
  async enqueue(store, id, tenant, endpoint, dueAt) {
    checks += 1
    const task = sampleTask({
      id,
      agentName: `seller-${tenant}`,
      clientKey: `client-${endpoint}`,
      pendingCheck: { txHash: hex32(checks, 0xc), signature: null, attempts: 0, nextAt: dueAt },
    })
    await store.insertTask(task, [])
    return recheckQueueKeys(task)
  },
  async claim(store, now, leaseUntil, share) {
    return ((await store.claimDueRechecks?.(now, leaseUntil, share)) ?? []).map((found) => found.id)
  },
  async settle(store, id, settled) {
    const check = { txHash: hex32(Number(id.slice(-4)), 0xe), signature: null, attempts: 1 }
    await store.setPendingCheck(id, settled.done ? null : { ...check, nextAt: settled.retryAt })
  },
}

/** The queues that claim by the fair policy; each case below runs on all of them. */
const FAIR_QUEUES = [webhookQueue, mailQueue, recheckQueue]

/**
 * The conformance cases of the fair lease queue (FairQueue.ts), one property over every queue that claims by it:
 * webhook deliveries, outgoing mail and payment re-checks.
 */
export function fairQueueCases(test: StoreTest, withStore: WithStore): void {
  for (const queue of FAIR_QUEUES)
    test(
      `property: ${queue.name}: every claim takes exactly what the core policy (pickFair) picks, over random tenants, endpoints, due times, leases and outcomes`,
      withStore(async (store) => {
        if (queue === recheckQueue && !store.claimDueRechecks) return
        const next = seeded(37)
        const [tenants, endpoints] = [3, 8]
        await queue.setup(store, tenants, endpoints)
        // The model: every pending item, its keys, when it is due and until when it is leased.
        const model = new Map<string, FairQueued>()
        let made = 0
        for (let round = 0; round < 12; round++) {
          const now = at(10 * round + 5)
          for (let count = next(12); count > 0; count--) {
            made += 1
            const id = `task_fair${String(made).padStart(4, '0')}`
            const dueAt = at(10 * round + next(6))
            const keys = await queue.enqueue(store, id, next(tenants), next(endpoints), dueAt)
            model.set(id, { id, ...keys, dueAt: dueAt.getTime(), leasedUntil: null })
          }
          const share = { limit: 1 + next(8), perTenant: 1 + next(4), perEndpoint: 1 + next(3) }
          const want = claimFair([...model.values()], now.getTime(), share).sort()
          const leaseUntil = at(10 * round + 5 + next(25))
          const got = (await queue.claim(store, now, leaseUntil, share)).sort()
          same(got, want, `round ${round}`)
          for (const id of got) {
            const item = model.get(id)
            if (item) Object.assign(item, { dueAt: leaseUntil.getTime(), leasedUntil: leaseUntil.getTime() })
            const roll = next(3)
            if (roll === 0) continue // still hanging
            if (roll === 1) {
              await queue.settle(store, id, { done: true }, now)
              model.delete(id)
            } else {
              const retryAt = at(10 * round + 5 + next(20))
              await queue.settle(store, id, { done: false, retryAt }, now)
              if (item) Object.assign(item, { dueAt: retryAt.getTime(), leasedUntil: null })
            }
          }
        }
        equal(made > 40, true, 'the property ran over enough items')
      }),
    )
}
