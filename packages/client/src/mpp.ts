import { Mppx, tempo } from 'mppx/client'
import type { AgentmarketClient, WriteOptions } from './client.ts'
import { errorFromResponse } from './errors.ts'
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
  // mppx calls its fetch with (input, init): the client's fetch (retries included) takes them as one Request.
  const base = ((url: RequestInfo | URL, init?: RequestInit) =>
    client.fetch(new Request(url, init))) as typeof fetch
  const mppx = Mppx.create({ polyfill: false, fetch: base, methods: [tempo.charge(options.tempo)] })
  const url = `${client.baseUrl}/api/agents/${encodeURIComponent(agent)}/tasks/${encodeURIComponent(skill)}`
  const response = await mppx.fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'Idempotency-Key': options.idempotencyKey ?? crypto.randomUUID(),
      ...client.buyerKey(input?.buyer),
    },
    body: JSON.stringify(input ?? {}),
    signal: options.signal,
  })
  if (!response.ok) throw await errorFromResponse(response)
  return { task: (await response.json()) as Task, receipt: response.headers.get('payment-receipt') }
}
