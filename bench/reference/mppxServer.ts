/**
 * mppx's own server for bench/reference.ts: mppx 0.11's `mppx/server` as its documentation sets it up (`Mppx.create`
 * with `tempo.charge`, its default replay store in memory), in front of a paid route on Bun.serve: a 402 with the
 * challenge, or the paid answer with its Payment-Receipt.
 * Env: PORT, TEMPO_RPC_URL (the scripted Tempo node), PAY_TO (the seller's address), PRICE (e.g. 0.01), CURRENCY.
 */
import { Mppx, tempo } from 'mppx/server'
import { type Address, createClient, http } from 'viem'
import { tempo as tempoChain } from 'viem/tempo/chains'

const env = (name: string) => {
  const value = process.env[name]
  if (!value) throw new Error(`mppxServer: ${name} is not set`)
  return value
}
const client = createClient({
  chain: tempoChain,
  transport: http(env('TEMPO_RPC_URL'), { retryCount: 0, timeout: 10_000 }),
})
const mppx = Mppx.create({
  secretKey: 'bench-reference-secret-key-of-at-least-32-bytes',
  realm: '127.0.0.1',
  methods: [tempo.charge({ currency: env('CURRENCY') as Address, getClient: () => client })],
})
const charge = { amount: env('PRICE'), recipient: env('PAY_TO') as Address, description: 'Summary' }

Bun.serve({
  port: Number(env('PORT')),
  hostname: '127.0.0.1',
  async fetch(request) {
    if (new URL(request.url).pathname === '/health') return new Response('ok')
    const result = await mppx.charge(charge)(request)
    if (result.status === 402) return result.challenge
    const { params } = (await request.json()) as { params?: unknown }
    return result.withReceipt(Response.json({ status: 'paid', params }))
  },
})
