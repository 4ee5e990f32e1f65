import { strictEqual as equal, ok } from 'node:assert/strict'
import type { Store } from '../ports/Store.ts'
import { at, type StoreTest, sampleAgent, sampleMilestone, WIDE, type WithStore } from './fixtures.ts'
import { sampleEntry } from './mailCases.ts'
import { delivery, hook } from './webhookCases.ts'

/** The store's change version, or 'unsupported' for a store without one (it has no read caches to keep). */
const versionOf = (store: Store) => store.changeVersion?.() ?? Promise.resolve('unsupported')

/** The conformance cases of the change version read caches are keyed by (StoreLifecycle.changeVersion). */
export function changeVersionCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: changeVersion, where the store has it, moves after every write that public reads show, not after reads',
    withStore(async (store) => {
      if ((await versionOf(store)) === 'unsupported') return
      const seen = new Set([await versionOf(store)])
      const moved = async (what: string) => {
        const now = await versionOf(store)
        ok(!seen.has(now), `changeVersion did not move after ${what}`)
        seen.add(now)
      }
      await store.insertAgent(sampleAgent({ name: 'versioned' }), [])
      await moved('insertAgent')
      await store.getAgent('versioned')
      await store.listAgents({ limit: 10, offset: 0 })
      equal(await versionOf(store), [...seen].at(-1), 'a read moved changeVersion')
      await store.recordHeartbeat('versioned', at(1), {
        event: {
          kind: 'agent.online',
          agent: 'versioned',
          at: at(1),
          summary: 'versioned is live',
          data: {},
        },
        notSeenSince: at(-5),
      })
      await moved('recordHeartbeat')
      await store.insertMilestone(sampleMilestone({ agentName: 'versioned' }), [])
      await moved('insertMilestone')
    }),
  )

  test(
    "behavior: changeVersion stays through the background passes' work (outbox claims and outcomes, re-check claims, kv), so an idle server keeps its read caches",
    withStore(async (store) => {
      if ((await versionOf(store)) === 'unsupported') return
      await store.insertAgent(sampleAgent({ name: 'seller' }), [])
      await store.insertWebhook(hook('a'), 10)
      await store.acceptOrderMail({
        key: 'mail_1',
        receivedAt: at(0),
        task: null,
        events: [],
        reply: sampleEntry('mail_1'),
      })
      const before = await versionOf(store)
      // What the webhook pass does every 250 ms, the mail pass and the re-check pass every second.
      await store.webhooksFor('seller', 'task_1')
      await store.listWebhooks('seller', null)
      await store.enqueueDeliveries([delivery('d1', 'a', '1')], 1_000)
      const [claimed] = await store.claimDueDeliveries(at(3), at(10), WIDE)
      equal(claimed?.id, 'd1')
      await store.settleDelivery('d1', { outcome: 'delivered', at: at(4), status: 200, latencyMs: 2 })
      await store.listDeliveries('a', 10)
      const [mail] = await store.claimDueMail(at(3), at(10), WIDE)
      equal(mail?.id, 'mail_1')
      await store.settleMail('mail_1', { outcome: 'sent', at: at(4) })
      await store.claimDueRechecks?.(at(3), at(10), WIDE)
      await store.kvPut('cursor', '1')
      await store.kvUpdate('cursor', () => ({ op: 'set', value: '2', result: null }))
      await store.kvDelete('cursor')
      equal(
        await versionOf(store),
        before,
        'a background pass moved changeVersion: every read cache was emptied',
      )
    }),
  )
}
