import { Mppx, tempo } from 'mppx/client'
import type { AgentmarketClient, WriteOptions } from './client.ts'
import { plainFetch, postSkillOrder } from './skillOrder.ts'
import type { PaidOrderInput, Task } from './types.ts'

/** How to pay by MPP: the Tempo charge method's parameters (its `account`; `getClient` for another Tempo node). */
export type MppOptions = WriteOptions & { tempo: NonNullable<Parameters<typeof tempo.charge>[0]> }

/** An MPP order's answer: the task, paid, and the Payment-Receipt header (null when the answer carried none). */
export type MppOrder = { task: Task; receipt: string | null }

/**
 * Orders `skill` (its slug) of `agent` paid by MPP (mppx's client, Tempo charge): the per-skill path answers 402
 * with a challenge, mppx pays USDC.e on Tempo and sends the same request with its credential, and the answer is the
 * task, already paid. A retry of the same credential gets the same task, never a second payment.
 */
export async function orderWithMpp(
  client: AgentmarketClient,
  agent: string,
  skill: string,
  input: PaidOrderInput = {},
  options: MppOptions,
): Promise<MppOrder> {
  const mppx = Mppx.create({
    polyfill: false,
    fetch: plainFetch(client),
    methods: [tempo.charge(options.tempo)],
  })
  const response = await postSkillOrder(client, mppx.fetch, { agent, skill, input }, options)
  return { task: (await response.json()) as Task, receipt: response.headers.get('payment-receipt') }
}
