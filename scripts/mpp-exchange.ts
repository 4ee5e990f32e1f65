/**
 * One machine-payment exchange against a real `bun start`, for manual runs and closing notes: the server's Tempo
 * RPC is the scripted one of the tests, served over HTTP; the buyer is the real mppx client.
 * Run: bun scripts/mpp-exchange.ts
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Challenge } from 'mppx'
import { Mppx, tempo } from 'mppx/client'
import { startMarketServer } from '../tests/support/process.ts'
import { scriptedTempo, tempoPayer } from '../tests/support/tempo.ts'

const node = scriptedTempo()
const rpc = await node.serve()
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mpp-exchange-'))
const server = await startMarketServer({
  DATABASE_URL: `file:${join(folder, 'market.db')}`,
  TEMPO_RPC_URL: rpc.url,
})
const base = server.base

/** Prints a response like `curl -i`, long header values trimmed. */
async function show(title: string, response: Response) {
  console.log(`\n# ${title}\nHTTP ${response.status}`)
  for (const [name, value] of response.headers)
    console.log(`${name}: ${value.length > 160 ? `${value.slice(0, 160)}…` : value}`)
  console.log(`\n${(await response.clone().text()).slice(0, 400)}`)
}

const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

try {
  const skills = [{ name: 'Summary', type: 'purchasable', price: '0.01' }]
  const { apiKey } = (await (
    await fetch(`${base}/api/agents/register`, json('POST', { name: 'seller', skills }))
  ).json()) as { apiKey: string }
  await fetch(
    `${base}/api/agents/seller`,
    json('PUT', { walletAddress: tempoPayer(1).address }, { authorization: `Bearer ${apiKey}` }),
  )
  const url = `${base}/api/agents/seller/tasks/summary`
  const order = json('POST', { params: { text: 'hello' } })
  const challenge = await fetch(url, order)
  await show(`POST ${url} without a credential`, challenge)
  console.log('\nmppx parses the challenge as:', JSON.stringify(Challenge.fromResponse(challenge)))
  const buyer = Mppx.create({
    polyfill: false,
    methods: [tempo.charge({ account: tempoPayer(2), getClient: () => node.client('buyer') })],
  })
  await show('the same request paid by the mppx client', await buyer.fetch(url, order))
} finally {
  server.stop()
  await rpc.stop()
  rmSync(folder, { recursive: true, force: true })
}
