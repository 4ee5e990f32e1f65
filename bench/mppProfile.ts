/**
 * Where the server's CPU goes on a machine payment, measured in one process with `process.cpuUsage()`:
 *  1. the route: the server built as `bun start` builds it (startServer: file database, production settings), its
 *     order route called with `app.handle` (no sockets): a 402 challenge, a paid order, a replayed credential;
 *  2. mppx alone: an Mppx instance configured as ours (tempo charge, replay markers in a libSQL store on the same
 *     database, the same kind of Tempo client), its charge handler called directly for a 402 and for a payment;
 *  3. mppx's parts: the functions its tempo charge handler calls per payment, each timed alone on a real credential.
 * The scripted Tempo node runs in a child process over HTTP, so its CPU (decoding, mining) is not counted; credentials
 * are made before each paid batch is timed. CPU per call includes the runtime's (GC) threads.
 * Usage: bun bench/mppProfile.ts [--count N] [--json PATH] [--phases PATH]
 * Profile: bun --cpu-prof --cpu-prof-dir DIR bench/mppProfile.ts --phases DIR/phases.json, then
 * bun bench/profileSummary.ts DIR/*.cpuprofile DIR/phases.json
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Challenge, Credential } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { Mppx, Store as MppxStore, tempo } from 'mppx/server'
import {
  type Client,
  createClient,
  decodeFunctionData,
  type Hex,
  http,
  keccak256,
  parseEventLogs,
  toHex,
} from 'viem'
import { call, getTransactionReceipt } from 'viem/actions'
import { Abis, Transaction } from 'viem/tempo'
import { tempo as tempoChain } from 'viem/tempo/chains'
import { eventsOfNewTask } from '../packages/core/src/actions/newTask.ts'
import { createMppCharger } from '../packages/core/src/payments/Mpp.ts'
import {
  TRANSFER_WITH_MEMO_EVENT_ABI,
  TRANSFER_WITH_MEMO_TOPIC,
} from '../packages/core/src/payments/MppMemo.ts'
import { replayKey } from '../packages/core/src/payments/MppReplay.ts'
import type { TaskRecord } from '../packages/core/src/Task.ts'
import { readSettings } from '../packages/server/src/env.ts'
import { startServer } from '../packages/server/src/serve.ts'
import { libsqlStore, openDatabase } from '../packages/store-libsql/src/index.ts'
import { freePort } from '../tests/support/process.ts'
import { scriptedTempo, TEMPO_USDC_E, tempoPayer } from '../tests/support/tempo.ts'
import { formatMs, table } from './lib/section.ts'

const flag = (name: string) => {
  const index = process.argv.indexOf(name)
  return index > 0 ? process.argv[index + 1] : undefined
}

if (process.argv.includes('--node')) {
  // The child: the scripted node over HTTP, its URL on stdout, until killed.
  const rpc = await scriptedTempo().serve()
  console.log(rpc.url)
  await new Promise(() => {})
}

/** 402 challenges timed; paid orders are a quarter of it (each needs a credential made first). */
const COUNT = Number(flag('--count') ?? 2_000)
const PAID = Math.max(50, Math.floor(COUNT / 4))
/** The least work a verification needs, as measured below (the goal of issue 41 is the paid order's ratio to it). */
const LEAST_WORK = 'least work: one sender recovery, one call decode, one log decode'
const LEAST_WORK_RECEIPT =
  'least work, sender from the receipt: receipt read, one call decode, one log decode'
/** mppx's handler with the market's own broadcast (each step once), as packages/core/src/payments/Mpp.ts makes it. */
const OUR_CHARGER = "our charger alone: payment (mppx's handler, our broadcast)"
/** The same for hash (push) credentials: the client sent its transaction, the server reads its receipt. */
const OUR_CHARGER_HASH = 'our charger alone: payment, hash credential'
const MPPX_HASH = 'mppx charge handler alone: payment, hash credential'
const ROUTE_HASH = 'route: paid order, hash credential (201)'
/** The least work a hash credential's verification needs: its receipt read, its memo log decoded once. */
const LEAST_WORK_HASH = 'least work of a hash credential: receipt read (raw JSON-RPC), one log decode'
/**
 * The least work a requirement of issue 41 needs, with the durable writes it needs: the claim (the order's claim and
 * the transfer's replay marker, one commit) before any money moves, and the task (one commit) after.
 */
const FLOOR = 'floor of the requirement: least work, one claim+marker commit, one task commit'
const FLOOR_HASH =
  'floor of the requirement, hash credential: its least work, one marker commit, one task commit'
/** A hash's money moved before it came, so its claim may be its task's (a unique transaction hash): one commit. */
const FLOOR_HASH_ONE =
  'floor of the requirement, hash credential: its least work, one task commit (the task its claim)'
/** Rounds of each measurement, in turn; each row is the median round. */
const ROUNDS = 5
/**
 * Calls of each least-work and floor row per round: the least work is ~0.3-2 ms, so 100 calls once (before) moved
 * 1-3.5 ms between runs on a loaded machine; this many in each of the rounds, beside the route's, give a median.
 */
const LEAST_CALLS = Math.max(200, Math.floor(COUNT / 2))
const JSON_PATH = flag('--json')
/** Where to write each measured phase's window (wall-clock µs, as a .cpuprofile's times), for profileSummary.ts. */
const PHASES = flag('--phases')

/** One measured phase: CPU per call (all threads; the median round's) and its window for a profile. */
export type Phase = {
  name: string
  calls: number
  cpuUs: number
  systemUs: number
  start: number
  end: number
}
/** What this script measured, for bench/mpp.ts. */
export type MppProfile = { route: Phase[]; mppx: Phase[]; parts: Phase[] }

const phases: Phase[] = []
const nowMicros = () => (performance.timeOrigin + performance.now()) * 1000

/** CPU µs of this process per call of `run` over `calls` calls in turn, kept as phase `name`. */
async function measure(name: string, calls: number, run: (index: number) => unknown): Promise<Phase> {
  const start = nowMicros()
  const before = process.cpuUsage()
  for (let index = 0; index < calls; index++) await run(index)
  const used = process.cpuUsage(before)
  const cpuUs = (used.user + used.system) / calls
  const phase = { name, calls, cpuUs, systemUs: used.system / calls, start, end: nowMicros() }
  phases.push(phase)
  return phase
}

const nodeProcess = Bun.spawn(['bun', import.meta.path, '--node'], { stdout: 'pipe', stderr: 'inherit' })
const reader = nodeProcess.stdout.getReader()
const rpcUrl = new TextDecoder().decode((await reader.read()).value).trim()
reader.releaseLock()

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mpp-profile-'))
const databaseUrl = `file:${join(folder, 'market.db')}`
const server = await startServer(
  readSettings({
    NODE_ENV: 'production',
    HOME: folder,
    PORT: String(freePort()),
    HOST: '127.0.0.1',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'off',
    DATABASE_URL: databaseUrl,
    TEMPO_RPC_URL: rpcUrl,
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
const seller = tempoPayer(1).address
await handle('/api/agents/seller', {
  ...post(JSON.stringify({ walletAddress: seller }), { authorization: `Bearer ${apiKey}` }),
  method: 'PUT',
})
const orderPath = '/api/agents/seller/tasks/summary'

/** A Tempo client over HTTP, as the server makes one (serve.ts). */
const tempoHttpClient = (): Client =>
  createClient({ chain: tempoChain, transport: http(rpcUrl, { retryCount: 0, timeout: 10_000 }) })
const buyerClient = tempoHttpClient()
const buyer = MppxClient.create({
  polyfill: false,
  methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => buyerClient, mode: 'pull' })],
})
/** A buyer paying in push mode: it sends its transaction (mined by the node) and hands over its hash. */
const pusher = MppxClient.create({
  polyfill: false,
  methods: [tempoClient.charge({ account: tempoPayer(3), getClient: () => buyerClient, mode: 'push' })],
})

type Order = { body: string; credential: string }
type Payer = typeof buyer
/** `count` credentials for the route from `payer` (pull by default), one per distinct order body, from its own 402s. */
async function routeCredentials(label: string, count: number, payer: Payer = buyer): Promise<Order[]> {
  const made: Order[] = []
  for (let index = 0; index < count; index++) {
    const body = JSON.stringify({ buyer: 'profile', params: { run: label, n: index } })
    made.push({ body, credential: await payer.createCredential(await handle(orderPath, post(body))) })
  }
  return made
}
const challengeBody = JSON.stringify({ params: { q: 'challenge' } })
async function routeChallenge() {
  const answer = await handle(orderPath, post(challengeBody))
  await answer.arrayBuffer()
  if (answer.status !== 402) throw new Error(`a challenge answered ${answer.status}`)
}
async function routePay(order: Order, expected: number) {
  const answer = await handle(orderPath, post(order.body, { authorization: order.credential }))
  const text = await answer.text()
  if (answer.status !== expected)
    throw new Error(`a paid order answered ${answer.status}: ${text.slice(0, 200)}`)
}

// mppx alone, configured as the server configures it (packages/core/src/payments/Mpp.ts), and as mppx's own
// documentation does (its charge method whole: the handler runs `validate`, then `broadcast`, which validates again).
const replay = libsqlStore(await openDatabase(databaseUrl))
/** The task a warm-up order paid by `reference`, as the market stored it: the template of the floor's tasks. */
async function paidTask(reference: Hex): Promise<TaskRecord> {
  const id = await replay.findTaskIdByTxHash(reference)
  const task = id ? await replay.getTask('seller', id) : null
  if (!task) throw new Error(`no task paid by ${reference}`)
  return task
}

/**
 * The durable writes a paid order's requirement needs, on the market's database file opened as the market opens it:
 * before any money moves, the order's claim and the transfer's replay marker in one commit (a hash credential: the
 * marker alone); after, the task and its events in one commit (`claimingTask`: a hash's, its unique transaction hash
 * the claim). Each claim is of a new transfer, and each task new.
 */
function floorWrites(template: TaskRecord, authorization: string) {
  let serial = 0
  let hash: Hex = '0x'
  const next = () => {
    serial += 1
    hash = keccak256(toHex(`floor-${process.pid}-${serial}`))
    return hash
  }
  const marker = () => ({ expires: Date.now() + 300_000, type: 'mppx:replay' })
  return {
    claimAndMarker: () => {
      const reference = next()
      const claim = { reference, authorization, validBefore: null, fingerprint: 'floor' }
      return replay.kvUpdateAll([`mpp:order:floor:${reference}`, replayKey(reference)], () => ({
        writes: [
          { op: 'set', value: claim },
          { op: 'set', value: marker() },
        ],
        result: true,
      }))
    },
    marker: () =>
      replay.kvUpdate(replayKey(next()), (current) =>
        current === null ? { op: 'set', value: marker(), result: true } : { op: 'noop', result: false },
      ),
    /** A task claiming a new transfer by its unique transaction hash, in one commit. */
    claimingTask: () => {
      next()
      return task()
    },
    task,
  }
  async function task() {
    const at = new Date()
    const payment = { ...(template.payment as NonNullable<TaskRecord['payment']>), txHash: hash, at }
    const record = { ...template, id: crypto.randomUUID(), createdAt: at, payment }
    const stored = await replay.insertTask(record, eventsOfNewTask(record))
    if (stored.outcome !== 'inserted') throw new Error(`the floor's task: ${stored.outcome}`)
  }
}

const tempoCharge = tempo.charge({
  currency: TEMPO_USDC_E,
  getClient: (() => {
    const client = tempoHttpClient()
    return () => client
  })(),
  store: MppxStore.from({
    get: (key: string) => replay.kvGet(key),
    put: (key: string, value: unknown) => replay.kvPut(key, value),
    delete: (key: string) => replay.kvDelete(key),
    update: ((key: string, change: never) => replay.kvUpdate(key, change)) as never,
  }) as never,
})
const mppxOf = (method: typeof tempoCharge) =>
  Mppx.create({
    secretKey: 'profile-secret-key-of-at-least-32-bytes!!',
    realm: '127.0.0.1',
    methods: [method],
  })
const mppx = mppxOf({ ...tempoCharge, validate: undefined })
const mppxDefault = mppxOf(tempoCharge)
const chargeOptions = (index: number) => ({
  amount: '0.01',
  recipient: seller,
  description: 'Summary by seller: 0.01 USDC.e',
  scope: 'seller/summary',
  meta: { bodyDigest: `profile-${index}` },
})
const bare = (authorization?: string) =>
  new Request(`http://127.0.0.1${orderPath}`, {
    method: 'POST',
    headers: authorization ? { authorization } : {},
  })
// Our charger alone (packages/core/src/payments/Mpp.ts): mppx's handler with the market's own broadcast of signed
// transactions, on the same store and the same kind of client, without the route's task, budgets and answer.
const charger = createMppCharger(
  {
    secretKey: 'profile-secret-key-of-at-least-32-bytes!!',
    realm: '127.0.0.1',
    currency: TEMPO_USDC_E,
    getClient: (() => {
      const client = tempoHttpClient()
      return () => client
    })(),
  },
  replay,
)
const chargerRequest = (index: number) => ({
  amountBaseUnits: 10_000n,
  recipient: seller,
  description: 'Summary by seller: 0.01 USDC.e',
  scope: 'seller/summary',
  bodyDigest: `charger-${index}`,
})
/** `count` credentials for our charger alone from `payer`, each from its own 402 for request `offset + n`. */
async function chargerCredentials(offset: number, count: number, payer: Payer = buyer): Promise<string[]> {
  const made: string[] = []
  for (let index = 0; index < count; index++) {
    const answer = await charger.charge(bare(), chargerRequest(offset + index))
    if (answer.paid) throw new Error('our charger alone: no challenge')
    made.push(await payer.createCredential(answer.challenge))
  }
  return made
}

/** `count` credentials for mppx alone from `payer`, each from its handler's own 402 for options `offset + n`. */
async function mppxCredentials(offset: number, count: number, payer: Payer = buyer): Promise<string[]> {
  const made: string[] = []
  for (let index = 0; index < count; index++) {
    const answer = await mppx.charge(chargeOptions(offset + index))(bare())
    if (answer.status !== 402) throw new Error('mppx alone: no challenge')
    made.push(await payer.createCredential(answer.challenge))
  }
  return made
}

try {
  // Warm-up: the first paid order loads mppx and viem's Tempo chain; the rest warm the JIT.
  const warm = await routeCredentials('warm', 50)
  for (const order of warm) await routePay(order, 201)
  for (const order of await routeCredentials('warm-hash', 50, pusher)) await routePay(order, 201)
  for (let index = 0; index < COUNT; index++) await routeChallenge()
  for (const [index, credential] of (await mppxCredentials(0, 50)).entries())
    await mppx.charge(chargeOptions(index))(bare(credential))
  for (const [index, credential] of (await chargerCredentials(0, 50)).entries())
    await charger.charge(bare(credential), chargerRequest(index))
  for (const [index, credential] of (await chargerCredentials(500_000, 50, pusher)).entries())
    await charger.charge(bare(credential), chargerRequest(500_000 + index))
  for (const [index, credential] of (await mppxCredentials(500_000, 50, pusher)).entries())
    await mppx.charge(chargeOptions(500_000 + index))(bare(credential))

  // mppx's parts and the least work, on one real credential (a warm-up order's) and the receipt of its settlement.
  const credential = Credential.deserialize(warm[0]?.credential ?? '')
  const raw = (credential.payload as { signature: Hex }).signature
  const transaction = Transaction.deserialize(raw as Transaction.TransactionSerializedTempo)
  const data = transaction.calls[0]?.data as Hex
  const receipt = await getTransactionReceipt(buyerClient, { hash: keccak256(raw) })
  const transferWithMemo = Abis.tip20.filter(
    (item) => item.type === 'function' && item.name === 'transferWithMemo',
  )
  /** The least work of a signed transaction: its sender recovered, its transfer call and its memo log decoded once. */
  const leastWork = () => {
    Transaction.deserialize(raw as Transaction.TransactionSerializedTempo)
    decodeFunctionData({ abi: transferWithMemo, data })
    memoLogs()
  }
  /** The least work of a hash credential: its receipt read (raw JSON-RPC), its memo log decoded once. */
  const leastWorkHash = async () => {
    const read = (await buyerClient.request({
      method: 'eth_getTransactionReceipt',
      params: [keccak256(raw)],
    } as never)) as typeof receipt
    memoLogs(read.logs)
  }
  const floor = floorWrites(await paidTask(keccak256(raw)), warm[0]?.credential ?? '')

  // Route and mppx alone in alternating rounds, so the machine's drift (shared cores) hits both alike.
  const orders = await routeCredentials('paid', PAID)
  const credentials = await mppxCredentials(1_000_000, PAID)
  const defaultCredentials = await mppxCredentials(2_000_000, PAID)
  const ourCredentials = await chargerCredentials(3_000_000, PAID)
  const hashOrders = await routeCredentials('paid-hash', PAID, pusher)
  const ourHashCredentials = await chargerCredentials(4_000_000, PAID, pusher)
  const mppxHashCredentials = await mppxCredentials(5_000_000, PAID, pusher)
  const rounds: Phase[][] = []
  for (let round = 0; round < ROUNDS; round++) {
    const share = (list: unknown[]) => Math.floor(list.length / ROUNDS)
    const from = round * share(orders)
    rounds.push([
      await measure('route: 402 challenge', Math.floor(COUNT / ROUNDS), routeChallenge),
      await measure('mppx charge handler alone: 402', Math.floor(COUNT / ROUNDS), async (index) => {
        const answer = await mppx.charge(chargeOptions(round * COUNT + index))(bare())
        if (answer.status !== 402) throw new Error('mppx alone: no challenge')
        await answer.challenge.arrayBuffer()
      }),
      await measure('route: paid order (201)', share(orders), (index) =>
        routePay(orders[from + index] as Order, 201),
      ),
      await measure('mppx charge handler alone: payment', share(orders), async (index) => {
        const options = chargeOptions(1_000_000 + from + index)
        const answer = await mppx.charge(options)(bare(credentials[from + index]))
        if (answer.status !== 200) throw new Error(`mppx alone: payment answered ${answer.status}`)
      }),
      await measure(OUR_CHARGER, share(orders), async (index) => {
        const answer = await charger.charge(
          bare(ourCredentials[from + index]),
          chargerRequest(3_000_000 + from + index),
        )
        if (!answer.paid) throw new Error(`our charger alone: payment answered ${answer.challenge.status}`)
      }),
      await measure(
        "mppx charge handler alone: payment, mppx's default method",
        share(orders),
        async (index) => {
          const options = chargeOptions(2_000_000 + from + index)
          const answer = await mppxDefault.charge(options)(bare(defaultCredentials[from + index]))
          if (answer.status !== 200) throw new Error(`mppx alone: payment answered ${answer.status}`)
        },
      ),
      await measure('route: same credential again (200)', share(orders), (index) =>
        routePay(orders[from + index] as Order, 200),
      ),
      await measure(ROUTE_HASH, share(hashOrders), (index) =>
        routePay(hashOrders[from + index] as Order, 201),
      ),
      await measure(OUR_CHARGER_HASH, share(orders), async (index) => {
        const answer = await charger.charge(
          bare(ourHashCredentials[from + index]),
          chargerRequest(4_000_000 + from + index),
        )
        if (!answer.paid) throw new Error(`our charger alone: hash answered ${answer.challenge.status}`)
      }),
      await measure(MPPX_HASH, share(orders), async (index) => {
        const options = chargeOptions(5_000_000 + from + index)
        const answer = await mppx.charge(options)(bare(mppxHashCredentials[from + index]))
        if (answer.status !== 200) throw new Error(`mppx alone: hash answered ${answer.status}`)
      }),
      await measure(LEAST_WORK, LEAST_CALLS, leastWork),
      await measure(LEAST_WORK_HASH, LEAST_CALLS, leastWorkHash),
      await measure(FLOOR, LEAST_CALLS, async () => {
        leastWork()
        await floor.claimAndMarker()
        await floor.task()
      }),
      await measure(FLOOR_HASH, LEAST_CALLS, async () => {
        await leastWorkHash()
        await floor.marker()
        await floor.task()
      }),
      await measure(FLOOR_HASH_ONE, LEAST_CALLS, async () => {
        await leastWorkHash()
        await floor.claimingTask()
      }),
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
  const route = [
    'route: 402 challenge',
    'route: paid order (201)',
    'route: same credential again (200)',
    ROUTE_HASH,
  ].map(medianOf)
  const alone = [
    'mppx charge handler alone: 402',
    'mppx charge handler alone: payment',
    "mppx charge handler alone: payment, mppx's default method",
    OUR_CHARGER,
    MPPX_HASH,
    OUR_CHARGER_HASH,
  ].map(medianOf)

  const simulation = {
    ...transaction,
    account: transaction.from,
    calls: transaction.calls,
    feePayerSignature: undefined,
  }
  const parts = [
    await measure('Credential.deserialize', COUNT, () => Credential.deserialize(orders[0]?.credential ?? '')),
    await measure('Challenge.verify (HMAC by ox/noble)', COUNT, () =>
      Challenge.verify(credential.challenge, { secretKey: 'not the key' }),
    ),
    await measure('mppx.charge(options): a handler made (zod parse)', COUNT, (index) =>
      mppx.charge(chargeOptions(index)),
    ),
    await measure('Transaction.deserialize (viem/tempo: recovers the sender)', 100, () =>
      Transaction.deserialize(raw as Transaction.TransactionSerializedTempo),
    ),
    await measure('decodeFunctionData, Abis.tip20 (every selector hashed)', 200, () =>
      decodeFunctionData({ abi: Abis.tip20, data }),
    ),
    await measure('decodeFunctionData, transferWithMemo alone', 200, () =>
      decodeFunctionData({ abi: transferWithMemo, data }),
    ),
    await measure('parseEventLogs, Abis.tip20, one event name', 200, () =>
      parseEventLogs({ abi: Abis.tip20, eventName: 'Transfer', logs: receipt.logs }),
    ),
    await measure('eth_call simulation (viem call over HTTP)', 200, () =>
      call(buyerClient, simulation as never),
    ),
    await measure('bare JSON-RPC over HTTP (eth_blockNumber)', 200, () =>
      buyerClient.request({ method: 'eth_blockNumber' } as never),
    ),
    await measure('parseEventLogs, TransferWithMemo alone, logs filtered by topic', 200, () => memoLogs()),
    await measure(LEAST_WORK_RECEIPT, 200, async () => {
      await getTransactionReceipt(buyerClient, { hash: keccak256(raw) })
      decodeFunctionData({ abi: transferWithMemo, data })
      memoLogs()
    }),
    // The least work a verification needs (a sender recovered once, or the receipt read, which names it; the calls and
    // logs decoded once with their own items) and the floor of the requirement, each the median of the rounds above.
    ...[LEAST_WORK, LEAST_WORK_HASH, FLOOR, FLOOR_HASH, FLOOR_HASH_ONE].map(medianOf),
  ]
  const cpuOf = (list: Phase[], name: string) =>
    list.find((phase) => phase.name === name)?.cpuUs ?? Number.NaN
  const least = cpuOf(parts, LEAST_WORK)
  const leastByReceipt = cpuOf(parts, LEAST_WORK_RECEIPT)
  const paid = cpuOf(route, 'route: paid order (201)')
  const handler = cpuOf(alone, 'mppx charge handler alone: payment')
  const ours = cpuOf(alone, OUR_CHARGER)
  const leastHash = cpuOf(parts, LEAST_WORK_HASH)
  /** The rounds' lowest and highest CPU per call of `name`: how much a median of them may still move. */
  const spread = (name: string) => {
    const all = rounds.flatMap((round) =>
      round.filter((phase) => phase.name === name).map((phase) => phase.cpuUs),
    )
    return `${formatMs(Math.min(...all) / 1000)}-${formatMs(Math.max(...all) / 1000)}`
  }
  /** The memo logs of the settlement's receipt (or `logs`) decoded with their own event item. */
  function memoLogs(logs = receipt.logs) {
    return parseEventLogs({
      abi: TRANSFER_WITH_MEMO_EVENT_ABI,
      logs: logs.filter((log) => log.topics[0]?.toLowerCase() === TRANSFER_WITH_MEMO_TOPIC),
      strict: true,
    })
  }
  const rows = (list: Phase[]) =>
    list.map((phase) => [
      phase.name,
      phase.calls,
      formatMs(phase.cpuUs / 1000),
      formatMs(phase.systemUs / 1000),
    ])
  const header = ['measured (in process)', 'calls', 'CPU / call', 'of which system']
  console.log(table(header, [...rows(route), ...rows(alone), ...rows(parts)]))
  const times = (value: number, of: number) => `${(value / of).toFixed(2)}x`
  console.log(
    `\nRounds' range (CPU / call, ${ROUNDS} rounds of ${LEAST_CALLS} calls): least work ${spread(LEAST_WORK)}, of a hash credential ${spread(LEAST_WORK_HASH)}; floor of the requirement ${spread(FLOOR)}, of a hash credential ${spread(FLOOR_HASH)}`,
  )
  console.log(
    `Over the floor of the requirement (same run): the paid order ${times(paid, cpuOf(parts, FLOOR))}, by hash ${times(cpuOf(route, ROUTE_HASH), cpuOf(parts, FLOOR_HASH))} (over its one-commit floor: ${times(cpuOf(route, ROUTE_HASH), cpuOf(parts, FLOOR_HASH_ONE))})`,
  )
  console.log(
    `CPU over the least work of a verification (same run): the paid order ${times(paid, least)}, mppx's handler alone ${times(handler, least)}, our charger alone ${times(ours, least)}; with the sender read from the receipt: ${times(paid, leastByReceipt)} and ${times(handler, leastByReceipt)}`,
  )
  console.log(
    `CPU over the least work of a hash credential (same run): the paid order ${times(cpuOf(route, ROUTE_HASH), leastHash)}, mppx's handler alone ${times(cpuOf(alone, MPPX_HASH), leastHash)}, our charger alone ${times(cpuOf(alone, OUR_CHARGER_HASH), leastHash)}`,
  )
  const result: MppProfile = { route, mppx: alone, parts }
  if (JSON_PATH) await Bun.write(JSON_PATH, JSON.stringify(result))
  if (PHASES) await Bun.write(PHASES, JSON.stringify(phases))
} finally {
  await server.stop()
  await replay.close()
  nodeProcess.kill()
  rmSync(folder, { recursive: true, force: true })
}
