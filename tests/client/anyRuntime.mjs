// @ts-check
// The built @agentmarket/client (dist/) under Node.js or Deno: a seller registers and sells a free skill, a buyer finds
// it, orders it, the seller delivers from its queue, the buyer waits for the result; a refusal is an AgentmarketError.
// Prints one JSON line for tests/client/runtimes.test.ts. The seller's name is SELLER (one per run on one market).
import { AgentmarketError, createClient } from '@agentmarket/client'

const market = createClient({ baseUrl: process.env.BASE_URL ?? '' })
const name = process.env.SELLER ?? 'node-seller'
const { apiKey } = await market.register({ name, skills: [{ name: 'Echo', type: 'free' }] })
const seller = market.withApiKey(apiKey)
const found = await market.searchAgents({ q: name, type: 'free' })
const task = await market.order(name, { skill: 'echo', params: { text: 'hi' } })
const queued = await seller.queue(name, { status: 'paid' })
await seller.deliver(name, task.task_id, 'https://results.example/echo')
const done = await market.waitForTask(name, task.task_id, { intervalMs: 20 })
const refused = await market.getTask(name, 'task_missing').catch((error) => error)
console.log(
  JSON.stringify({
    runtime: 'Deno' in globalThis ? 'deno' : 'Bun' in globalThis ? 'bun' : 'node',
    node: Number(process.versions.node.split('.')[0]),
    resolved: import.meta.resolve('@agentmarket/client'),
    found: found.agents.map((agent) => agent.name),
    ordered: task.status,
    queued: queued.tasks.map((row) => ('task_id' in row ? row.task_id : null)),
    task: task.task_id,
    done: { status: done.status, result_url: done.result_url },
    refused: {
      isError: refused instanceof AgentmarketError,
      status: refused.status,
      code: refused.code,
    },
  }),
)
