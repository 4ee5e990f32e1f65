import type { AgentmarketClient, WriteOptions } from './client.ts'
import { errorFromResponse } from './errors.ts'
import { newIdempotencyKey } from './fetching.ts'
import type { PaidOrderInput } from './types.ts'

/**
 * The client's fetch (retries included) as payment libraries call a fetch, with `(input, init)`: @x402/fetch and
 * mppx wrap it to answer the 402.
 */
export function plainFetch(client: AgentmarketClient): typeof fetch {
  return ((input: RequestInfo | URL, init?: RequestInit) =>
    client.fetch(new Request(input, init))) as typeof fetch
}

/**
 * POSTs an order of `skill` (its slug) of `agent` to its per-skill path through `paying` (a fetch that pays the 402
 * and sends the request again): the 2xx answer, or its refusal thrown as an AgentmarketError. The Idempotency-Key
 * rides on both requests, so a retry of a lost answer gets the first task and pays nothing more.
 */
export async function postSkillOrder(
  client: AgentmarketClient,
  paying: (url: string, init: RequestInit) => Promise<Response>,
  order: { agent: string; skill: string; input: PaidOrderInput },
  options: WriteOptions,
): Promise<Response> {
  const { agent, skill, input } = order
  const url = `${client.baseUrl}/api/agents/${encodeURIComponent(agent)}/tasks/${encodeURIComponent(skill)}`
  const response = await paying(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'Idempotency-Key': options.idempotencyKey ?? newIdempotencyKey(),
      ...client.buyerKey(input?.buyer),
    },
    body: JSON.stringify(input ?? {}),
    signal: options.signal,
  })
  if (!response.ok) throw await errorFromResponse(response)
  return response
}
