/**
 * Where the server's CPU goes on an x402 paid order, measured in one process with `process.cpuUsage()`:
 *  1. the route: the server built as `bun start` builds it (startServer: file database, production settings, x402
 *     settled on anvil, MPP offered beside it), its order route called with `app.handle` (no sockets): the 402 and a
 *     paid order (201);
 *  2. the facilitators alone: ours (`viemX402Facilitator`, verify then settle, the record step empty) and x402's
 *     reference (`@x402/core`'s `x402Facilitator` with `@x402/evm`'s exact scheme over a viem client set up as
 *     bench/reference/x402Hono.ts sets it: nonce manager, receipts polled every 250 ms), on the same anvil;
 *  3. the least work of an x402 verification and settlement: one EIP-712 signature recovery, one settlement
 *     transaction (signed here, its fields known), one receipt read.
 * anvil runs in its own process, so its CPU is not counted; payment payloads are signed before each batch is timed.
 * Usage: bun bench/x402Profile.ts [--count N] [--json PATH] [--phases PATH] [--rpc]
 * `--rpc` counts the JSON-RPC calls each measurement sends to anvil, per call (reading each request's body costs
 * CPU: quote the CPU figures of a run without it).
 * Profile: bun --cpu-prof --cpu-prof-dir DIR bench/x402Profile.ts --phases DIR/phases.json, then
 * bun bench/profileSummary.ts DIR/*.cpuprofile DIR/phases.json
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402Facilitator } from '@x402/core/facilitator'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types'
import { authorizationTypes, eip3009ABI, toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme as FacilitatorExactEvmScheme } from '@x402/evm/exact/facilitator'
import {
  createWalletClient,
  type EIP1193RequestFn,
  encodeFunctionData,
  type Hex,
  hashTypedData,
  http,
  nonceManager,
  type PublicRpcSchema,
  parseSignature,
  publicActions,
  recoverAddress,
} from 'viem'
import { type HDAccount, privateKeyToAccount } from 'viem/accounts'
import { viemX402Facilitator } from '../packages/core/src/adapters/viemX402.ts'
import { readSettings } from '../packages/server/src/env.ts'
import { startServer } from '../packages/server/src/serve.ts'
import { startAnvil } from '../tests/support/anvil.ts'
import { freePort } from '../tests/support/process.ts'
import { scriptedTempo } from '../tests/support/tempo.ts'
import { x402Payer } from '../tests/support/x402.ts'
import { formatMs, table } from './lib/section.ts'

const flag = (name: string) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? process.argv[index + 1] : undefined
}

/** Paid orders per measurement (each a real settlement on anvil); 402s are four times as many. */
const COUNT = Number(flag('--count') ?? 200)
/** Rounds of each measurement, in turn; each row is the median round. */
const ROUNDS = 5
const JSON_PATH = flag('--json')
/** Where to write each measured phase's window (wall-clock µs, as a .cpuprofile's times), for profileSummary.ts. */
const PHASES = flag('--phases')
const LEAST_WORK = 'least work: one signature recovery, one settlement transaction, one receipt read'
const PAID = 'route: paid order (201)'
const OURS = 'our facilitator alone: verify + settle'
const REFERENCE = "x402's facilitator alone (reference setup): verify + settle"

/** One measured phase: CPU per call (all threads; the median round's) and its window for a profile. */
export type Phase = {
  name: string
  calls: number
  cpuUs: number
  systemUs: number
  start: number
  end: number
  /** JSON-RPC calls to anvil per call, by method (with `--rpc`). */
  rpc: Record<string, number>
}

const phases: Phase[] = []
/** JSON-RPC calls sent so far, by method (with `--rpc`). */
const rpcCalls = new Map<string, number>()
if (process.argv.includes('--rpc')) {
  const send = globalThis.fetch
  globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    if (typeof init?.body === 'string' && init.body.includes('"jsonrpc"'))
      for (const call of [JSON.parse(init.body)].flat() as { method: string }[])
        rpcCalls.set(call.method, (rpcCalls.get(call.method) ?? 0) + 1)
    return send(input, init)
  }) as typeof fetch
}
const nowMicros = () => (performance.timeOrigin + performance.now()) * 1000

/** CPU µs of this process per call of `run` over `calls` calls in turn, kept as phase `name`. */
async function measure(name: string, calls: number, run: (index: number) => unknown): Promise<Phase> {
  const start = nowMicros()
  const rpcBefore = new Map(rpcCalls)
  const before = process.cpuUsage()
  for (let index = 0; index < calls; index++) await run(index)
  const used = process.cpuUsage(before)
  const rpc = Object.fromEntries(
    [...rpcCalls].map(([method, count]) => [method, (count - (rpcBefore.get(method) ?? 0)) / calls]),
  )
  const phase = {
    name,
    calls,
    cpuUs: (used.user + used.system) / calls,
    systemUs: used.system / calls,
    start,
    end: nowMicros(),
    rpc: Object.fromEntries(Object.entries(rpc).filter(([, count]) => count > 0)),
  }
  phases.push(phase)
  return phase
}

const anvil = await startAnvil()
await anvil.installUsdc()
const [, buyer, marketSettler, oursSettler, referenceSettler, seller] = anvil.accounts as HDAccount[]
if (!buyer || !marketSettler || !oursSettler || !referenceSettler || !seller)
  throw new Error('anvil has too few accounts')
await anvil.mintUsdc(buyer.address, 10n ** 15n)
const keyOf = (account: HDAccount) =>
  `0x${Buffer.from(account.getHdKey().privateKey ?? new Uint8Array()).toString('hex')}` as Hex

const tempoRpc = await scriptedTempo().serve()
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-x402-profile-'))
const server = await startServer(
  readSettings({
    NODE_ENV: 'production',
    HOME: folder,
    PORT: String(freePort()),
    HOST: '127.0.0.1',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'off',
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    TEMPO_RPC_URL: tempoRpc.url,
    CHAIN_RPC_URL: anvil.rpcUrl,
    MIN_CONFIRMATIONS: '1',
    X402_SETTLER_KEY: keyOf(marketSettler),
  }),
)
const handle = (path: string, init: RequestInit) =>
  server.app.handle(new Request(`http://127.0.0.1${path}`, init))
const post = (body: string, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body,
})
const registered = await handle(
  '/api/agents/register',
  post(JSON.stringify({ name: 'seller', skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }] })),
)
const { apiKey } = (await registered.json()) as { apiKey: string }
await handle('/api/agents/seller', {
  ...post(JSON.stringify({ walletAddress: seller.address }), { authorization: `Bearer ${apiKey}` }),
  method: 'PUT',
})
const orderPath = '/api/agents/seller/tasks/summary'

// The payer: x402's own client, as bench/reference.ts pays (the signing happens before each timed batch).
const payer = x402Payer(buyer)
const offerBody = JSON.stringify({ buyer: 'profile', params: { q: 'offer' } })
const offered = await handle(orderPath, post(offerBody))
const required: PaymentRequired = decodePaymentRequiredHeader(offered.headers.get('payment-required') ?? '')
const requirements = required.accepts[0] as PaymentRequirements
const sign = (): Promise<PaymentPayload> => payer.createPaymentPayload(required) as Promise<PaymentPayload>
/** `count` payloads, each a fresh authorization of the order's offer. */
const payloads = async (count: number) => Promise.all(Array.from({ length: count }, sign))

let orderNumber = 0
async function routeOffer() {
  const answer = await handle(orderPath, post(offerBody))
  await answer.arrayBuffer()
  if (answer.status !== 402) throw new Error(`an offer answered ${answer.status}`)
}
async function routePay(payload: PaymentPayload) {
  const body = JSON.stringify({ buyer: 'profile', params: { n: orderNumber++ } })
  const answer = await handle(
    orderPath,
    post(body, { 'payment-signature': encodePaymentSignatureHeader(payload) }),
  )
  const text = await answer.text()
  if (answer.status !== 201) throw new Error(`a paid order answered ${answer.status}: ${text.slice(0, 300)}`)
}

// Our facilitator alone, as serve.ts makes it (its own settling account: one per process and facilitator).
const ours = viemX402Facilitator({
  rpcUrl: anvil.rpcUrl,
  chain: anvil.chain,
  account: privateKeyToAccount(keyOf(oursSettler)),
})
async function oursPays(payload: PaymentPayload) {
  const verified = await ours.verify(payload, requirements)
  if (!verified.isValid) throw new Error(`ours: verify said ${verified.invalidReason}`)
  const settled = await ours.settle(payload, requirements, async () => {})
  if (!settled.success) throw new Error(`ours: settle said ${settled.errorReason}`)
}

// x402's facilitator as bench/reference/x402Hono.ts sets it up.
const referenceAccount = privateKeyToAccount(keyOf(referenceSettler), { nonceManager })
const referenceClient = createWalletClient({
  account: referenceAccount,
  chain: anvil.chain,
  pollingInterval: 250,
  transport: http(anvil.rpcUrl, { retryCount: 0 }),
}).extend(publicActions)
const reference = new x402Facilitator().register(
  requirements.network as `${string}:${string}`,
  new FacilitatorExactEvmScheme(
    toFacilitatorEvmSigner({ ...referenceClient, address: referenceAccount.address } as never),
  ),
)
async function referencePays(payload: PaymentPayload) {
  const verified = await reference.verify(payload, requirements)
  if (!verified.isValid) throw new Error(`reference: verify said ${verified.invalidReason}`)
  const settled = await reference.settle(payload, requirements)
  if (!settled.success) throw new Error(`reference: settle said ${settled.errorReason}`)
}

// The least work: the payer recovered from the authorization's typed data once, one transaction carrying it signed
// (nonce, fees and gas known beforehand) and sent, its receipt read once.
const leastAccount = privateKeyToAccount(keyOf(anvil.accounts[6] as HDAccount))
const leastClient = createWalletClient({
  account: leastAccount,
  chain: anvil.chain,
  transport: http(anvil.rpcUrl, { retryCount: 0 }),
}).extend(publicActions)
const transferWithAuthorization = eip3009ABI.filter(
  (item) =>
    item.type === 'function' &&
    item.name === 'transferWithAuthorization' &&
    item.inputs.some((input) => input.name === 'v'),
)
const fees = await leastClient.estimateFeesPerGas()
let leastNonce = await leastClient.getTransactionCount({ address: leastAccount.address, blockTag: 'pending' })
async function leastWork(payload: PaymentPayload) {
  const { authorization, signature } = payload.payload as {
    authorization: { from: Hex; to: Hex; value: string; validAfter: string; validBefore: string; nonce: Hex }
    signature: Hex
  }
  const message = {
    from: authorization.from,
    to: authorization.to,
    value: BigInt(authorization.value),
    validAfter: BigInt(authorization.validAfter),
    validBefore: BigInt(authorization.validBefore),
    nonce: authorization.nonce,
  }
  const digest = hashTypedData({
    domain: {
      name: String(requirements.extra.name),
      version: String(requirements.extra.version),
      chainId: anvil.chain.id,
      verifyingContract: requirements.asset as Hex,
    },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message,
  })
  if ((await recoverAddress({ hash: digest, signature })) !== authorization.from)
    throw new Error('least work: the signature is not the payer')
  const { v, r, s } = parseSignature(signature)
  const data = encodeFunctionData({
    abi: transferWithAuthorization,
    args: [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      message.nonce,
      Number(v),
      r,
      s,
    ],
  } as never)
  const signed = await leastAccount.signTransaction({
    chainId: anvil.chain.id,
    type: 'eip1559',
    to: requirements.asset as Hex,
    data,
    gas: 200_000n,
    nonce: leastNonce++,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  })
  const hash = await leastClient.sendRawTransaction({ serializedTransaction: signed })
  // The node's receipt as sent, unformatted: the least a read of it costs (asked again while anvil stores the block).
  const read = () =>
    (leastClient.request as EIP1193RequestFn<PublicRpcSchema>)({
      method: 'eth_getTransactionReceipt',
      params: [hash],
    }) as Promise<{ status: Hex } | null>
  let receipt = await read()
  for (let wait = 0; receipt === null && wait < 100; wait++) {
    await Bun.sleep(5)
    receipt = await read()
  }
  if (receipt?.status !== '0x1') throw new Error('least work: the transfer was not mined at once')
}

try {
  // Warm-up: the first paid order loads @x402/evm; the rest warm the JIT.
  for (const payload of await payloads(20)) await routePay(payload)
  for (let index = 0; index < 200; index++) await routeOffer()
  for (const payload of await payloads(20)) await oursPays(payload)
  for (const payload of await payloads(20)) await referencePays(payload)
  for (const payload of await payloads(20)) await leastWork(payload)

  const share = Math.max(1, Math.floor(COUNT / ROUNDS))
  const rounds: Phase[][] = []
  for (let round = 0; round < ROUNDS; round++) {
    const [routeBatch, oursBatch, referenceBatch, leastBatch] = [
      await payloads(share),
      await payloads(share),
      await payloads(share),
      await payloads(share),
    ] as PaymentPayload[][] as [PaymentPayload[], PaymentPayload[], PaymentPayload[], PaymentPayload[]]
    rounds.push([
      await measure('route: 402 offer', share * 4, routeOffer),
      await measure(PAID, share, (index) => routePay(routeBatch[index] as PaymentPayload)),
      await measure(OURS, share, (index) => oursPays(oursBatch[index] as PaymentPayload)),
      await measure(REFERENCE, share, (index) => referencePays(referenceBatch[index] as PaymentPayload)),
      await measure(LEAST_WORK, share, (index) => leastWork(leastBatch[index] as PaymentPayload)),
    ])
  }
  /** Each measurement's median round. */
  const medianOf = (name: string): Phase => {
    const runs = rounds.flatMap((round) => round.filter((phase) => phase.name === name))
    const sorted = runs.sort((a, b) => a.cpuUs - b.cpuUs)
    return {
      ...(sorted[Math.floor(sorted.length / 2)] as Phase),
      calls: runs.reduce((sum, run) => sum + run.calls, 0),
    }
  }
  const measured = ['route: 402 offer', PAID, OURS, REFERENCE, LEAST_WORK].map(medianOf)
  console.log(
    table(
      ['measured (in process)', 'calls', 'CPU / call', 'of which system'],
      measured.map((phase) => [
        phase.name,
        phase.calls,
        formatMs(phase.cpuUs / 1000),
        formatMs(phase.systemUs / 1000),
      ]),
    ),
  )
  const cpuOf = (name: string) => measured.find((phase) => phase.name === name)?.cpuUs ?? Number.NaN
  const times = (name: string) => `${(cpuOf(name) / cpuOf(LEAST_WORK)).toFixed(2)}x`
  console.log(
    `\nCPU over the least work (same run): the paid order ${times(PAID)}, our facilitator alone ${times(OURS)}, x402's facilitator alone ${times(REFERENCE)}`,
  )
  if (rpcCalls.size > 0)
    for (const phase of measured)
      console.log(
        `${phase.name}: JSON-RPC calls per call: ${Object.entries(phase.rpc ?? {})
          .map(([method, count]) => `${method} ${count.toFixed(2)}`)
          .join(', ')}`,
      )
  if (JSON_PATH) await Bun.write(JSON_PATH, JSON.stringify(measured))
  if (PHASES) await Bun.write(PHASES, JSON.stringify(phases))
} finally {
  await server.stop()
  await tempoRpc.stop()
  anvil.stop()
  rmSync(folder, { recursive: true, force: true })
}
