import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { ChainUnavailableError } from '../errors.ts'
import { Marketplace } from '../Marketplace.ts'
import type { ChainReader } from '../ports/Chain.ts'
import { manualClock } from '../ports/Clock.ts'
import { sampleAgent, sampleTask } from '../testing/storeSuite.ts'

/** A market on memoryStore with one task whose background re-check is due, over `chain`. */
async function dueRecheck(chain: ChainReader) {
  const store = memoryStore()
  const clock = manualClock('2026-06-01T12:00:00Z')
  await store.insertAgent(sampleAgent({ name: 'seller' }), [])
  const hash = `0x${'ab'.repeat(32)}` as const
  const pendingCheck = {
    txHash: hash,
    signature: null,
    attempts: 0,
    nextAt: new Date(clock.now().getTime() - 1),
  }
  const task = sampleTask({ agentName: 'seller', status: 'pending_payment', pendingCheck })
  await store.insertTask(task, [])
  return {
    market: Marketplace.create({ store, clock, config: defaultConfig('https://m.example'), chain }),
    store,
    task,
  }
}

describe('recheckPendingPayments', () => {
  test('error: an unexpected failure reading the chain is handed to the host (report.failure, its cause kept); the check waits', async () => {
    const bug = new TypeError('the node answered something else')
    const { market, store, task } = await dueRecheck({
      headBlock: async () => 10n,
      receipts: async () => {
        throw bug
      },
    })
    const report = await market.recheckPendingPayments()
    expect(report.failure).toBeInstanceOf(ChainUnavailableError)
    expect((report.failure as Error).cause).toBe(bug)
    expect(report.paid).toBe(0)
    expect((await store.getTask('seller', task.id))?.status).toBe('pending_payment')
  })

  test('behavior: a plain outage is reported without a cause (the host only warns)', async () => {
    const { market } = await dueRecheck({
      headBlock: async () => {
        throw new ChainUnavailableError()
      },
      receipts: async () => [],
    })
    const { failure } = await market.recheckPendingPayments()
    expect(failure).toBeInstanceOf(ChainUnavailableError)
    expect((failure as Error).cause).toBeUndefined()
  })
})
