/**
 * Where the server's CPU goes on an x402 paid order, measured in one process with `process.cpuUsage()`:
 *  1. the route: the server built as `bun start` builds it (startServer: file database, production settings, x402
 *     settled on anvil, MPP offered beside it), its order route called with `app.handle` (no sockets): the 402 and a
 *     paid order (201);
 *  2. the facilitators alone: ours (`viemX402Facilitator`, verify then settle, the record step empty) and x402's
 *     reference (`@x402/core`'s `x402Facilitator` with `@x402/evm`'s exact scheme over a viem client set up as
 *     bench/reference/x402Hono.ts sets it: nonce manager, receipts polled every 250 ms), on the same anvil;
 *  3. the least work of an x402 verification and settlement: one EIP-712 signature recovery, one settlement
 *     transaction (signed here, its fields known), one receipt read;
 *  4. x402's reference server in this process (bench/reference/x402Hono.ts's Hono app: `@x402/hono`'s middleware, the
 *     facilitator in process, settling from its own account), its route called with `app.fetch`: its 402 and a paid
 *     order (200), as ours is called;
 *  5. the store writes alone, on the market's database file opened as the market opens it: a paid order's five as the
 *     route makes them, and the least the requirement needs (before the broadcast, the authorization's marker and the
 *     task with its settlement in one commit; after, the paid mark); the floor of the requirement is the reference's
 *     paid route plus that least.
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
  keccak256,
  nonceManager,
  type PublicRpcSchema,
  parseSignature,
  publicActions,
  recoverAddress,
  toHex,
} from 'viem'
import { type HDAccount, privateKeyToAccount } from 'viem/accounts'
import { forgetAll } from '../packages/core/src/actions/kvRetention.ts'
import { eventsOfNewTask } from '../packages/core/src/actions/newTask.ts'
import { viemX402Facilitator } from '../packages/core/src/adapters/viemX402.ts'
import { feedEvents } from '../packages/core/src/events.ts'
import { authorizationKey, settlementKey } from '../packages/core/src/payments/X402.ts'
import type { TaskRecord } from '../packages/core/src/Task.ts'
import { readSettings } from '../packages/server/src/env.ts'
import { startServer } from '../packages/server/src/serve.ts'
import { libsqlStore, openDatabase } from '../packages/store-libsql/src/index.ts'
import { startAnvil } from '../tests/support/anvil.ts'
import { freePort } from '../tests/support/process.ts'
import { scriptedTempo } from '../tests/support/tempo.ts'
import { x402Payer } from '../tests/support/x402.ts'
import { formatMs, table } from './lib/section.ts'
import { referenceX402App } from './reference/x402Hono.ts'

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
/** Paid orders at a time in the concurrent rows, as bench/reference.ts's clients. */
const TOGETHER = 8
const PAID_TOGETHER = `route: paid order (201), ${TOGETHER} at a time`
const REFERENCE_PAID_TOGETHER = `reference route: paid order (200), ${TOGETHER} at a time`
const LEAST_WORK = 'least work: one signature recovery, one settlement transaction, one receipt read'
const PAID = 'route: paid order (201)'
const OURS = 'our facilitator alone: verify + settle'
const REFERENCE = "x402's facilitator alone (reference setup): verify + settle"
const OFFER = 'route: 402 offer'
const REFERENCE_OFFER = 'reference route: 402 offer (`@x402/hono`, in process)'
const REFERENCE_PAID = 'reference route: paid order (200), facilitator in process'
const WRITES =
  "store writes alone: a paid order's five in four commits (claims and marker; record with task; paid mark; record and claim removed)"
const LEAST_WRITES =
  'store writes alone, the least the requirement needs: marker and task with its settlement in one commit; paid mark'

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

/** CPU µs of this process per call of `run` over `calls` calls (`together` at a time), kept as phase `name`. */
async function measure(
  name: string,
  calls: number,
  run: (index: number) => unknown,
  together = 1,
): Promise<Phase> {
  const start = nowMicros()
  const rpcBefore = new Map(rpcCalls)
  const before = process.cpuUsage()
  // `together` callers at once, each taking the next call, as concurrent clients would.
  let next = 0
  await Promise.all(
    Array.from({ length: together }, async () => {
      while (next < calls) await run(next++)
    }),
  )
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
const [buyerAddress, sellerAddress] = [buyer.address, seller.address]
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
  return (JSON.parse(text) as { task_id: string }).task_id
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

// x402's reference server, its Hono app called in this process as ours is.
const referenceRoute = referenceX402App({
  rpcUrl: anvil.rpcUrl,
  settlerKey: keyOf(anvil.accounts[7] as HDAccount),
  payTo: seller.address,
  price: '0.01',
})
const referenceCall = (headers: Record<string, string> = {}) =>
  referenceRoute.fetch(new Request('http://127.0.0.1/skill', post(offerBody, headers)))
const referenceRequired = decodePaymentRequiredHeader(
  (await referenceCall()).headers.get('payment-required') ?? '',
)
const referencePayloads = async (count: number) =>
  Promise.all(
    Array.from(
      { length: count },
      () => payer.createPaymentPayload(referenceRequired) as Promise<PaymentPayload>,
    ),
  )
async function referenceOffer() {
  const answer = await referenceCall()
  await answer.arrayBuffer()
  if (answer.status !== 402) throw new Error(`the reference's offer answered ${answer.status}`)
}
async function referencePay(payload: PaymentPayload) {
  const answer = await referenceCall({ 'payment-signature': encodePaymentSignatureHeader(payload) })
  const text = await answer.text()
  if (answer.status !== 200) throw new Error(`the reference answered ${answer.status}: ${text.slice(0, 300)}`)
}

// The store writes alone, on the market's database file through a store of its own (as a second process would).
const writesStore = libsqlStore(await openDatabase(`file:${join(folder, 'market.db')}`))
let writeSerial = 0
/** A task as the route stores one before its broadcast (`template`: one it paid), its settlement `hash`. */
const pendingTask = (template: TaskRecord, hash: Hex): TaskRecord => ({
  ...template,
  id: crypto.randomUUID(),
  createdAt: new Date(),
  status: 'pending_payment',
  payment: null,
  pendingCheck: { txHash: hash, signature: null, attempts: 0, nextAt: new Date(Date.now() + 10_000) },
})
/** The paid mark of `task`, as settledOnChain writes it. */
async function markPaid(template: TaskRecord, task: TaskRecord, hash: Hex) {
  const at = new Date()
  const payment = { ...(template.payment as NonNullable<TaskRecord['payment']>), txHash: hash, at }
  const marked = await writesStore.markTaskPaid(task.id, payment, [feedEvents.taskPaid(task, hash, at)])
  if (marked !== 'paid') throw new Error(`the paid mark: ${marked}`)
}
/** A new settlement's hash and its authorization (a fresh nonce of the buyer), for one order's writes. */
function nextSettlement() {
  writeSerial += 1
  const hash = keccak256(toHex(`writes-${process.pid}-${writeSerial}`))
  const authorization = {
    from: buyerAddress,
    to: sellerAddress,
    value: '10000',
    validAfter: '0',
    validBefore: String(Math.floor(Date.now() / 1000) + 300),
    nonce: keccak256(toHex(`nonce-${process.pid}-${writeSerial}`)),
  }
  return { hash, authorization, marker: authorizationKey(authorization) }
}
/** A paid order's writes as payWithX402 makes them (tests/x402.test.ts, "writes the store five times in four commits"). */
async function writesAsMade(template: TaskRecord) {
  const { hash, authorization, marker } = nextSettlement()
  const task = pendingTask(template, hash)
  const body = `x402:order:${buyerAddress.toLowerCase()}:seller:body:${hash.slice(2, 66)}`
  const expiresAt = new Date((Number(authorization.validBefore) + 120) * 1000)
  await writesStore.kvUpdateAll([body, marker], () => ({
    writes: [
      { op: 'set', value: { taskId: task.id, fingerprint: hash, at: Date.now() } },
      { op: 'set', value: { task: task.id }, expiresAt },
    ],
    result: true,
  }))
  const { nonce, validBefore } = authorization
  const record = { payer: buyerAddress, nonce, validBefore, waits: [body] }
  const [, inserted] = await Promise.all([
    writesStore.kvUpdateAll([settlementKey(hash)], () => ({
      writes: [{ op: 'set', value: record }],
      result: true,
    })),
    writesStore.insertTask(task, eventsOfNewTask(task)),
  ])
  if (inserted.outcome !== 'inserted') throw new Error(`the task: ${inserted.outcome}`)
  await markPaid(template, task, hash)
  await forgetAll(writesStore, [settlementKey(hash), body])
}
/**
 * The least durable writes the requirement needs: before the broadcast, the authorization's marker and the task
 * carrying its settlement (the hash, the payer its buyer) in one group commit (both queued in one turn); the paid mark.
 */
async function leastWrites(template: TaskRecord) {
  const { hash, authorization, marker } = nextSettlement()
  const task = pendingTask(template, hash)
  const expiresAt = new Date((Number(authorization.validBefore) + 120) * 1000)
  const [, inserted] = await Promise.all([
    writesStore.kvUpdateAll([marker], () => ({
      writes: [{ op: 'set', value: { task: task.id }, expiresAt }],
      result: true,
    })),
    writesStore.insertTask(task, eventsOfNewTask(task)),
  ])
  if (inserted.outcome !== 'inserted') throw new Error(`the task: ${inserted.outcome}`)
  await markPaid(template, task, hash)
}

try {
  // Warm-up: the first paid order loads @x402/evm; the rest warm the JIT.
  let paidId = ''
  for (const payload of await payloads(20)) paidId = await routePay(payload)
  const template = await writesStore.getTask('seller', paidId)
  if (template?.status !== 'paid') throw new Error('no paid task to copy')
  for (let index = 0; index < 200; index++) await referenceOffer()
  for (const payload of await referencePayloads(20)) await referencePay(payload)
  for (let index = 0; index < 20; index++) await writesAsMade(template)
  for (let index = 0; index < 20; index++) await leastWrites(template)
  for (let index = 0; index < 200; index++) await routeOffer()
  for (const payload of await payloads(20)) await oursPays(payload)
  for (const payload of await payloads(20)) await referencePays(payload)
  for (const payload of await payloads(20)) await leastWork(payload)

  const share = Math.max(1, Math.floor(COUNT / ROUNDS))
  type Batch = PaymentPayload[]
  const rounds: Phase[][] = []
  for (let round = 0; round < ROUNDS; round++) {
    const [routeBatch, oursBatch, referenceBatch, leastBatch, referenceRouteBatch, routeMany, referenceMany] =
      [
        await payloads(share),
        await payloads(share),
        await referencePayloads(share),
        await payloads(share),
        await payloads(share),
        await payloads(share),
        await referencePayloads(share),
      ] as [Batch, Batch, Batch, Batch, Batch, Batch, Batch]
    rounds.push([
      await measure(OFFER, share * 4, routeOffer),
      await measure(REFERENCE_OFFER, share * 4, referenceOffer),
      await measure(REFERENCE_PAID, share, (index) =>
        referencePay(referenceRouteBatch[index] as PaymentPayload),
      ),
      await measure(WRITES, share, () => writesAsMade(template)),
      await measure(LEAST_WRITES, share, () => leastWrites(template)),
      await measure(PAID, share, (index) => routePay(routeBatch[index] as PaymentPayload)),
      await measure(OURS, share, (index) => oursPays(oursBatch[index] as PaymentPayload)),
      await measure(REFERENCE, share, (index) => referencePays(referenceBatch[index] as PaymentPayload)),
      await measure(LEAST_WORK, share, (index) => leastWork(leastBatch[index] as PaymentPayload)),
      await measure(PAID_TOGETHER, share, (index) => routePay(routeMany[index] as PaymentPayload), TOGETHER),
      await measure(
        REFERENCE_PAID_TOGETHER,
        share,
        (index) => referencePay(referenceMany[index] as PaymentPayload),
        TOGETHER,
      ),
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
  const measured = [
    OFFER,
    PAID,
    REFERENCE_OFFER,
    REFERENCE_PAID,
    PAID_TOGETHER,
    REFERENCE_PAID_TOGETHER,
    OURS,
    REFERENCE,
    LEAST_WORK,
    WRITES,
    LEAST_WRITES,
  ].map(medianOf)
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
  // The floor of the requirement: the reference's paid route plus the least durable writes it lacks.
  const floor = cpuOf(REFERENCE_PAID) + cpuOf(LEAST_WRITES)
  const floorTogether = cpuOf(REFERENCE_PAID_TOGETHER) + cpuOf(LEAST_WRITES)
  console.log(
    `Paid route, ours / the reference's: ${(cpuOf(PAID) / cpuOf(REFERENCE_PAID)).toFixed(2)}x one at a time, ${(cpuOf(PAID_TOGETHER) / cpuOf(REFERENCE_PAID_TOGETHER)).toFixed(2)}x ${TOGETHER} at a time`,
  )
  console.log(
    `Floor of the requirement (the reference's paid route + the least writes): ${formatMs(floor / 1000)} one at a time (ours ${(cpuOf(PAID) / floor).toFixed(2)}x of it), ${formatMs(floorTogether / 1000)} ${TOGETHER} at a time (ours ${(cpuOf(PAID_TOGETHER) / floorTogether).toFixed(2)}x)`,
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
  await writesStore.close()
  await server.stop()
  await tempoRpc.stop()
  anvil.stop()
  rmSync(folder, { recursive: true, force: true })
}
