import type { Store } from '../ports/Store.ts'
import { agentStoreCases } from './agentCases.ts'
import { agentListCases } from './agentListCases.ts'
import { budgetStoreCases } from './budgetCases.ts'
import { changeVersionCases } from './changeVersionCases.ts'
import { fairQueueCases } from './fairQueueCases.ts'
import { jobStoreCases } from './jobCases.ts'
import { kvStoreCases } from './kvCases.ts'
import { mailStoreCases } from './mailCases.ts'
import { taskStoreCases } from './taskCases.ts'
import { trustCases } from './trustCases.ts'
import { userStoreCases } from './userCases.ts'
import { webhookStoreCases } from './webhookCases.ts'

export { sampleAgent, sampleEvent, sampleSkill, sampleTask, sampleUser } from './fixtures.ts'

/** The part of a test runner the suite needs; `bun:test`, `node:test` and vitest all fit. */
export type TestRunner = {
  describe(name: string, body: () => void): void
  test(name: string, body: () => Promise<void> | void, timeout?: number): void
}

/**
 * The conformance suite every Store adapter must pass, one describe per aggregate of the port (run one alone with
 * the runner's name filter, e.g. `bun test -t "TaskStore"`). `makeStore` returns a fresh, empty store per test.
 * @example storeSuite({ describe, test }, 'memoryStore', async () => memoryStore())
 */
export function storeSuite(runner: TestRunner, adapterName: string, makeStore: () => Promise<Store>): void {
  const { describe, test } = runner
  const withStore = (body: (store: Store) => Promise<void>) => async () => {
    const store = await makeStore()
    try {
      await body(store)
    } finally {
      await store.close()
    }
  }
  describe(`Store conformance: ${adapterName} > AgentStore`, () => {
    agentStoreCases(test, withStore)
    agentListCases(test, withStore)
  })
  describe(`Store conformance: ${adapterName} > UserStore`, () => userStoreCases(test, withStore))
  describe(`Store conformance: ${adapterName} > TaskStore`, () => {
    taskStoreCases(test, withStore)
    jobStoreCases(test, withStore)
    budgetStoreCases(test, withStore)
    trustCases(test, withStore)
  })
  describe(`Store conformance: ${adapterName} > MailStore`, () => mailStoreCases(test, withStore))
  describe(`Store conformance: ${adapterName} > WebhookStore`, () => webhookStoreCases(test, withStore))
  describe(`Store conformance: ${adapterName} > FairQueue`, () => fairQueueCases(test, withStore))
  describe(`Store conformance: ${adapterName} > KvStore`, () => kvStoreCases(test, withStore))
  describe(`Store conformance: ${adapterName} > StoreLifecycle`, () => changeVersionCases(test, withStore))
}
