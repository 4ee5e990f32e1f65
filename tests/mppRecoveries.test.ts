import { afterAll, beforeAll, expect, test } from 'bun:test'
import { secp256k1 } from '@noble/curves/secp256k1'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { createClient, http } from 'viem'
import { tempo as tempoChain } from 'viem/tempo/chains'
import { testApp } from '../packages/server/src/testing/http.ts'
import { TEMPO_USDC_E, tempoPayer } from './support/tempo.ts'

// The work of a paid MPP order, counted: a signed transaction's sender is recovered (secp256k1 in JavaScript, about
// a millisecond) once per order, the payer read and the market's broadcast sharing it, and a hash credential's payer
// is its receipt's sender, recovered never. Counted where every recovery happens: @noble/curves' Signature, which
// viem (through ox) and everything else here recover with. The scripted Tempo node recovers each transaction it mines,
// so it runs in a child process, out of the count.

const ORDER = 'http://localhost/api/agents/seller/tasks/summary'
let recoveries = 0
const recover = secp256k1.Signature.prototype.recoverPublicKey
let node: { kill(): void } | null = null
let rpcUrl = ''

beforeAll(async () => {
  secp256k1.Signature.prototype.recoverPublicKey = function counted(
    this: InstanceType<typeof secp256k1.Signature>,
    ...args: Parameters<typeof recover>
  ) {
    recoveries += 1
    return recover.apply(this, args)
  }
  const source = `${import.meta.dir}/../packages/server/src/dev/scriptedTempo.ts`
  const child = Bun.spawn(
    [
      'bun',
      '-e',
      `const { scriptedTempo } = await import(${JSON.stringify(source)}); console.log((await scriptedTempo().serve()).url); await new Promise(() => {})`,
    ],
    { stdout: 'pipe', stderr: 'inherit' },
  )
  node = child
  const reader = child.stdout.getReader()
  rpcUrl = new TextDecoder().decode((await reader.read()).value).trim()
  reader.releaseLock()
})

afterAll(() => {
  secp256k1.Signature.prototype.recoverPublicKey = recover
  node?.kill()
})

/** A market taking machine payments on the child's node, its seller, and a buyer paying in `mode` with mppx's client. */
async function paidOrder(mode: 'pull' | 'push') {
  const tempoClientOf = () => createClient({ chain: tempoChain, transport: http(rpcUrl, { retryCount: 0 }) })
  const server = tempoClientOf()
  const { app, register, call } = await testApp(undefined, {
    mpp: {
      secretKey: 'mpp-recoveries-secret-key-of-at-least-32-bytes',
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => server,
    },
  })
  const { key } = await register('seller', {
    skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }],
  })
  await call('PUT', '/api/agents/seller', { key, body: { walletAddress: tempoPayer(1).address } })
  const buyerNode = tempoClientOf()
  const buyer = MppxClient.create({
    polyfill: false,
    methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => buyerNode, mode })],
  })
  const post = (authorization?: string) =>
    new Request(ORDER, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ params: { q: mode } }),
    })
  // The credential is made (signed, and in push mode sent and mined) before the count starts.
  const credential = await buyer.createCredential(await app.handle(post()))
  recoveries = 0
  const answer = await app.handle(post(credential))
  expect(answer.status).toBe(201)
  return recoveries
}

test('a paid pull order recovers its signed transaction’s sender once: the payer read and the broadcast share it', async () => {
  expect(await paidOrder('pull')).toBe(1)
})

test('a paid push order (a hash credential) recovers no sender: its payer is the receipt’s sender', async () => {
  expect(await paidOrder('push')).toBe(0)
})
