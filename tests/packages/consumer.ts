// A TypeScript consumer of the packages: tests/packages/install.test.ts type-checks it inside an empty project that
// installed the tarballs, with moduleResolution node16 and bundler, so the `types` conditions of every exports map
// are what it reads. It is never run; in this repository it type-checks against the sources.
import { AgentmarketError, createClient, type Task } from '@agentmarket/client'
import { defaultConfig, Marketplace, type MarketplaceActions } from '@agentmarket/core'
import type { RouteRow } from '@agentmarket/core/routes'
import { toAgentRow } from '@agentmarket/core/rows'
import { storeSuite } from '@agentmarket/core/testing'
import { viemChain } from '@agentmarket/core/viem'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { openPostgres, postgresStore } from '@agentmarket/store-postgres'

/** Orders the free skill `ping` of `scout` and returns the new task's id (types only: never called). */
export async function orderPing(url: string): Promise<string> {
  const store = libsqlStore(await openDatabase(url))
  const market: MarketplaceActions = Marketplace.create({
    store,
    config: defaultConfig('http://localhost:3000'),
  })
  const order = await market.createTask('scout', { skill: 'ping' })
  if (order.outcome !== 'created') throw new Error(`not created: ${order.outcome}`)
  const status: 201 = order.status
  // @ts-expect-error the body of a created order is a task view, never a string: this fails if the types were `any`
  const wrong: string = order.body
  return `${order.body.task_id}${status}${wrong}`
}

/** The other entries' names, so each is resolved and typed. */
export const entries = { toAgentRow, storeSuite, viemChain, postgresStore, openPostgres }
export type Row = RouteRow

/** Reads a task's status with the client (types only: never called). */
export async function taskStatus(id: string): Promise<Task['status']> {
  const task = await createClient({ baseUrl: 'http://localhost:3000' }).getTask('scout', id)
  // @ts-expect-error a task's status is one of its states, never a number: this fails if the types were `any`
  const wrong: number = task.status
  return wrong === 0 ? new AgentmarketError(404, null, null).code && task.status : task.status
}
