import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Challenge, Credential } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { type Hex, keccak256 } from 'viem'
import { Transaction } from 'viem/tempo'
import { type MarketServer, startMarketServer } from '../support/process.ts'
import { type ScriptedTempo, scriptedTempo, type TempoRpcServer, tempoPayer } from '../support/tempo.ts'

// Attack: an observer of the Tempo chain and of every public answer (transaction hashes, raw signed transactions)
// but of no buyer's credential tries to read a task an MPP payment bought, or to take a settlement whose answer
// was lost. Each test drives it through bun start, the real mppx client and the scripted Tempo node over HTTP.

const SELLER_WALLET = tempoPayer(1).address
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mpp-attack-'))
let node: ScriptedTempo
let rpc: TempoRpcServer
let server: MarketServer
let serial = 0

beforeAll(async () => {
  node = scriptedTempo()
  rpc = await node.serve()
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    TEMPO_RPC_URL: rpc.url,
  })
  const registered = (await (
    await fetch(`${server.base}/api/agents/register`, {
      ...json({ name: 'seller', skills: [{ name: 'Summary', type: 'purchasable', price: '0.01' }] }),
    })
  ).json()) as { apiKey: string }
  await fetch(`${server.base}/api/agents/seller`, {
    ...json({ walletAddress: SELLER_WALLET }),
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
  })
})

afterAll(async () => {
  server?.stop()
  await rpc?.stop()
  rmSync(folder, { recursive: true, force: true })
})

function json(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  }
}

const row12 = () => `${server.base}/api/agents/seller/tasks/summary`
const row8 = () => `${server.base}/api/agents/seller/tasks`

/** A fresh order body whose params only its buyer knows. */
function victimOrder() {
  serial += 1
  return { params: { secret: `victim-secret-${serial}` }, buyer: 'victim' }
}

/** The real mppx client of the victim (anvil key 2) paying through the server in `mode`. */
function victimClient(mode: 'pull' | 'push') {
  return MppxClient.create({
    polyfill: false,
    methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('victim'), mode })],
  })
}

/** The raw signed transactions the server broadcast, as anyone reading the chain sees them. */
function broadcastOnChain(): Hex[] {
  return node.calls
    .filter((call) => call.method.startsWith('eth_sendRawTransaction'))
    .map((call) => (call.params as [Hex])[0])
}

/** The attacker's own, genuine challenge for `body` (row 12; row 8 takes the same): what anyone is handed. */
async function attackerChallenge(url: string, body: unknown) {
  const answer = await fetch(url, json(body))
  expect(answer.status).toBe(402)
  return Challenge.fromResponse(answer)
}

/** A TIP-20 token other than the one the challenges ask for. */
const OTHER_TOKEN = '0x20C0000000000000000000000000000000000001'

/** A transaction's call as the tests change it, and a Tempo transaction without its signature. */
type Call = { to?: Hex | null; data?: Hex }
type Signed = { chainId: number; calls: Call[] } & Record<string, unknown>

/**
 * The victim client's credential for challenge `signedFor`, and its transaction changed by `change` and signed again
 * by the same payer: what a payer (or a node) that tampers with a genuine payment hands the market.
 */
async function victimResigned(
  signedFor: Awaited<ReturnType<typeof attackerChallenge>>,
  change: (transaction: Signed) => Signed,
) {
  const signed = await victimClient('pull').createCredential(
    new Response(null, { status: 402, headers: { 'www-authenticate': Challenge.serialize(signedFor) } }),
  )
  const credential = Credential.deserialize(signed)
  const raw = (credential.payload as { signature: Hex }).signature
  const {
    signature: _signature,
    from: _from,
    hash: _hash,
    ...unsigned
  } = Transaction.deserialize(raw as never) as Signed
  const resigned = (await tempoPayer(2).signTransaction(change(unsigned as Signed) as never, {
    serializer: Transaction.serialize as never,
  })) as Hex
  return { credential, raw, resigned }
}

/** Every credential an observer can build around a settlement it saw: its hash, or its raw bytes. */
async function forgeries(hash: Hex, raw: Hex | null, body: Record<string, unknown>) {
  const own = await attackerChallenge(row12(), body)
  const invented = { ...own, id: 'invented-challenge-id' }
  const forged = [
    { name: 'a bare hash with an invented challenge', url: row12(), body, challenge: invented, hash },
    { name: "a hash with the attacker's own fresh challenge", url: row12(), body, challenge: own, hash },
    {
      name: "a hash with the attacker's own challenge on row 8",
      url: row8(),
      body: { ...body, skill: 'summary' },
      challenge: own,
      hash,
    },
  ]
  const credentials = forged.map(({ name, url, body: sent, challenge }) => ({
    name,
    url,
    body: sent,
    authorization: Credential.serialize(Credential.from({ challenge, payload: { type: 'hash', hash } })),
  }))
  if (raw)
    credentials.push({
      name: 'the raw signed transaction with the attacker’s own challenge',
      url: row12(),
      body,
      authorization: Credential.serialize(
        Credential.from({ challenge: own, payload: { type: 'transaction', signature: raw } }),
      ),
    })
  return credentials
}

/** How many tasks the seller has (the list is public). */
async function taskCount(): Promise<number> {
  const list = (await (await fetch(`${server.base}/api/agents/seller/tasks?status=all`)).json()) as {
    total: number
  }
  return list.total
}

describe('MPP credentials (attacks 1 and 3)', () => {
  for (const mode of ['push', 'pull'] as const) {
    test(`attack: a credential naming a paid ${mode} settlement's public hash opens nothing; only the buyer's own retry gets the task`, async () => {
      const body = victimOrder()
      const sent: string[] = []
      const client = victimClient(mode)
      client.onCredentialCreated(({ credential }) => {
        sent.push(credential)
      })
      const paid = await client.fetch(row12(), json(body))
      expect(paid.status).toBe(201)
      const task = (await paid.json()) as { task_id: string; payment: { tx_hash: Hex } }
      const hash = task.payment.tx_hash
      const raw = broadcastOnChain().find((candidate) => keccak256(candidate) === hash) ?? null
      if (mode === 'pull') expect(raw).not.toBeNull()
      const before = await taskCount()

      for (const forged of await forgeries(hash, raw, body)) {
        const answer = await fetch(forged.url, json(forged.body, { authorization: forged.authorization }))
        const text = await answer.text()
        expect(answer.status, forged.name).toBe(402)
        expect(text, forged.name).not.toContain(task.task_id)
        expect(text, forged.name).not.toContain(body.params.secret)
        expect(answer.headers.get('payment-receipt'), forged.name).toBeNull()
      }
      expect(await taskCount()).toBe(before)

      const retry = await fetch(row12(), json(body, { authorization: sent[0] ?? '' }))
      expect(retry.status).toBe(200)
      expect(retry.headers.get('payment-receipt')).toBeTruthy()
      const again = (await retry.json()) as { task_id: string; params: unknown }
      expect(again.task_id).toBe(task.task_id)
      expect(again.params).toEqual(body.params)
    })
  }

  test('attack: a settlement whose answer was lost cannot be recovered by an observer; the buyer’s retry gets its own task', async () => {
    const body = victimOrder()
    const challenge = await fetch(row12(), json(body))
    const credential = await victimClient('pull').createCredential(challenge)
    const before = await taskCount()
    // Mined, then the node fails both the broadcast's answer and the market's read of the receipt: the outcome is
    // unknown to the market (503 outcome_unknown: resend the same credential), and no task is stored yet.
    node.failNextBroadcast()
    node.failNextReceipt()
    const failed = await fetch(row12(), json(body, { authorization: credential }))
    expect(failed.status).toBe(503)
    expect(((await failed.json()) as { code: string }).code).toBe('outcome_unknown')
    expect(await taskCount()).toBe(before)

    // The chain shows the mined transfer; the observer builds credentials around it for the very same order.
    const raw = broadcastOnChain().at(-1)
    if (!raw) throw new Error('the server broadcast nothing')
    const hash = keccak256(raw)
    expect(node.receipt(hash)?.status).toBe('0x1')
    const stolen = [...(await forgeries(hash, raw, body)), ...(await forgeries(hash, raw, { params: {} }))]
    for (const forged of stolen) {
      const answer = await fetch(forged.url, json(forged.body, { authorization: forged.authorization }))
      expect(answer.status, forged.name).toBe(402)
      expect(answer.headers.get('payment-receipt'), forged.name).toBeNull()
    }
    expect(await taskCount()).toBe(before)

    const recovered = await fetch(row12(), json(body, { authorization: credential }))
    expect(recovered.status).toBe(201)
    const task = (await recovered.json()) as { task_id: string; params: unknown; payment: { tx_hash: Hex } }
    expect(task.params).toEqual(body.params)
    expect(task.payment.tx_hash).toBe(hash)
    const again = await fetch(row12(), json(body, { authorization: credential }))
    expect(again.status).toBe(200)
    expect(((await again.json()) as { task_id: string }).task_id).toBe(task.task_id)
    expect(await taskCount()).toBe(before + 1)
  })

  test('attack: the buyer’s own credential sent with another body, or to row 8 with another skill body, opens nothing', async () => {
    const body = victimOrder()
    const sent: string[] = []
    const client = victimClient('push')
    client.onCredentialCreated(({ credential }) => {
      sent.push(credential)
    })
    const paid = await client.fetch(row12(), json(body))
    const task = (await paid.json()) as { task_id: string }
    const credential = sent[0] ?? ''
    for (const other of [{ params: {} }, { ...body, buyer: 'someone-else' }]) {
      const answer = await fetch(row12(), json(other, { authorization: credential }))
      expect(answer.status).toBe(402)
      expect(await answer.text()).not.toContain(task.task_id)
    }
  })
})

// Attack: another payer knows the victim's order (its body, its Idempotency-Key) and sends its own new credential
// while the victim's first answer was lost or its outcome is unknown, hoping to be handed the victim's task or to have
// the market send the victim's signed transfer for it. An order's first credential is found only by its own payer
// (the signer of the transfer, recovered from its signature).
describe('MPP order keys are the payer’s own', () => {
  /** The attacker's real mppx client (anvil key 3), pull mode, and the credentials it signs. */
  function attackerClient() {
    const signed: string[] = []
    const client = MppxClient.create({
      polyfill: false,
      methods: [tempoClient.charge({ account: tempoPayer(3), getClient: () => node.client('attacker') })],
    })
    client.onCredentialCreated(({ credential }) => {
      signed.push(credential)
    })
    return { client, signed }
  }
  /** The hash of the transfer a pull-mode credential carries. */
  const referenceOf = (credential: string) =>
    keccak256(
      (
        Credential.deserialize(Credential.extractPaymentScheme(credential) ?? '').payload as {
          signature: Hex
        }
      ).signature,
    )

  test('attack: the victim’s Idempotency-Key and body with another payer’s new credential get no task of the victim: the attacker pays its own order', async () => {
    const body = victimOrder()
    const key = { 'idempotency-key': `victim-key-${serial}` }
    const paid = await victimClient('pull').fetch(row12(), json(body, key))
    expect(paid.status).toBe(201)
    const task = (await paid.json()) as { task_id: string }
    const attacker = attackerClient()
    const answer = await attacker.client.fetch(row12(), json(body, key))
    expect(answer.status).toBe(201)
    const own = (await answer.json()) as { task_id: string; payment: { tx_hash: Hex } }
    expect(own.task_id).not.toBe(task.task_id)
    expect(own.payment.tx_hash).toBe(referenceOf(attacker.signed[0] ?? ''))
  })

  test('attack: while the victim’s first transfer is unknown, another payer’s credential for the same body never makes the market send the victim’s transfer', async () => {
    const body = victimOrder()
    const challenge = await fetch(row12(), json(body))
    const credential = await victimClient('pull').createCredential(challenge)
    node.dropNextBroadcast()
    const failed = await fetch(row12(), json(body, { authorization: credential }))
    expect(((await failed.json()) as { code: string }).code).toBe('outcome_unknown')
    const victimTransfer = referenceOf(credential)
    const attacker = attackerClient()
    const answer = await attacker.client.fetch(row12(), json(body))
    expect(answer.status).toBe(201)
    const own = (await answer.json()) as { payment: { tx_hash: Hex } }
    expect(own.payment.tx_hash).toBe(referenceOf(attacker.signed[0] ?? ''))
    expect(node.receipt(victimTransfer)).toBeUndefined()
  })
})

// Attack: a payer signs a transfer for less than the price, or to another wallet, and sends it under the genuine
// challenge its memo names (so the HMAC, the order binding and the memo all check out). Only the transaction's own
// calls tell; mppx validates them once, inside its broadcast, before it claims or sends anything.
describe('MPP credentials: a transaction that does not pay its challenge', () => {
  const tampers = {
    'pays half the price': (request: Record<string, unknown>) => ({
      ...request,
      amount: String(BigInt(String(request.amount)) / 2n),
    }),
    'pays another wallet': (request: Record<string, unknown>) => ({
      ...request,
      recipient: tempoPayer(4).address,
    }),
  }
  for (const [name, tamper] of Object.entries(tampers)) {
    test(`attack: a signed transaction that ${name}, sent under the genuine challenge its memo names, is refused and never broadcast`, async () => {
      const body = victimOrder()
      const genuine = await attackerChallenge(row12(), body)
      // The client signs what a doctored copy asks; the copy keeps the id, so the memo names the genuine challenge.
      const doctored = { ...genuine, request: tamper(genuine.request) }
      const signed = await victimClient('pull').createCredential(
        new Response(null, { status: 402, headers: { 'www-authenticate': Challenge.serialize(doctored) } }),
      )
      const credential = Credential.serialize({ ...Credential.deserialize(signed), challenge: genuine })
      const broadcasts = broadcastOnChain().length
      const before = await taskCount()
      const answer = await fetch(row12(), json(body, { authorization: credential }))
      expect(answer.status).toBe(402)
      // Refused for what the transaction's calls pay, not earlier (the challenge, binding and memo are right).
      expect(((await answer.json()) as { detail: string }).detail).toContain('no matching payment call')
      expect(answer.headers.get('payment-receipt')).toBeNull()
      expect(broadcastOnChain().length).toBe(broadcasts)
      expect(await taskCount()).toBe(before)
    })
  }
})

// Attack: a payer (or a node) hands the market a transaction that is not the payment its genuine challenge asks, each
// checked by the market's own broadcast of signed transactions (packages/core/src/payments/MppBroadcast.ts): the
// transaction is the victim client's own for the genuine challenge, changed, then signed again by the same payer.
describe('MPP credentials: the market’s broadcast checks each part of a signed transaction once', () => {
  /** A fresh order, its genuine challenge, and the victim's signed transaction for it, changed by `change`. */
  async function tamperedCredential(change: (transaction: Signed) => Signed) {
    const body = victimOrder()
    const { credential, raw, resigned } = await victimResigned(await attackerChallenge(row12(), body), change)
    const authorization = Credential.serialize({
      ...credential,
      payload: { type: 'transaction', signature: resigned },
    })
    return { body, authorization, raw }
  }

  /** The victim's genuine credential for a fresh order, unchanged. */
  const genuineCredential = () => tamperedCredential((transaction) => transaction)

  const withData = (transaction: Signed, data: (old: Hex) => Hex): Signed => ({
    ...transaction,
    calls: transaction.calls.map((call) => ({ ...call, data: data(call.data as Hex) })),
  })

  const refusedBeforeBroadcast: Record<string, (transaction: Signed) => Signed> = {
    'pays in another token': (transaction) => ({
      ...transaction,
      calls: transaction.calls.map((call) => ({ ...call, to: OTHER_TOKEN })),
    }),
    'is for another chain id': (transaction) => ({ ...transaction, chainId: transaction.chainId + 1 }),
    'has trailing bytes after the transfer call': (transaction) =>
      withData(transaction, (data) => `${data}${'00'.repeat(32)}` as Hex),
    'calls another function with the same arguments': (transaction) =>
      withData(transaction, (data) => `0x095ea7b3${data.slice(10)}` as Hex),
  }
  for (const [name, change] of Object.entries(refusedBeforeBroadcast)) {
    test(`attack: a signed transaction that ${name} is refused with a 402 and never broadcast`, async () => {
      const { body, authorization } = await tamperedCredential(change)
      const broadcasts = broadcastOnChain().length
      const before = await taskCount()
      const answer = await fetch(row12(), json(body, { authorization }))
      expect(answer.status).toBe(402)
      expect(((await answer.json()) as { detail: string }).detail).toContain('Payment verification failed')
      expect(answer.headers.get('payment-receipt')).toBeNull()
      expect(broadcastOnChain().length).toBe(broadcasts)
      expect(await taskCount()).toBe(before)
    })
  }

  const lyingReceipts: Record<
    string,
    (receipt: Parameters<Parameters<ScriptedTempo['tamperNextReceipt']>[0]>[0]) => void
  > = {
    'whose transfer logs come from another contract': (receipt) => {
      for (const log of receipt.logs) log.address = OTHER_TOKEN
    },
    'whose transfer logs were paid by another account': (receipt) => {
      for (const log of receipt.logs)
        log.topics[1] = `0x${'00'.repeat(12)}${tempoPayer(5).address.slice(2)}` as Hex
    },
    'that reverted (its logs kept)': (receipt) => {
      receipt.status = '0x0'
    },
  }
  for (const [name, change] of Object.entries(lyingReceipts)) {
    test(`attack: a node answering a receipt ${name} gets the order no task and no receipt`, async () => {
      const { body, authorization } = await genuineCredential()
      const before = await taskCount()
      node.tamperNextReceipt(change)
      const answer = await fetch(row12(), json(body, { authorization }))
      expect(answer.status).not.toBe(201)
      expect(answer.headers.get('payment-receipt')).toBeNull()
      expect(await taskCount()).toBe(before)
    })
  }

  test('attack: a signed transaction whose memo names another challenge of the same order is refused and never broadcast', async () => {
    const body = victimOrder()
    const first = await attackerChallenge(row12(), body)
    const second = await attackerChallenge(row12(), body)
    const signed = await victimClient('pull').createCredential(
      new Response(null, { status: 402, headers: { 'www-authenticate': Challenge.serialize(first) } }),
    )
    const authorization = Credential.serialize({ ...Credential.deserialize(signed), challenge: second })
    const broadcasts = broadcastOnChain().length
    const answer = await fetch(row12(), json(body, { authorization }))
    expect(answer.status).toBe(402)
    expect(((await answer.json()) as { detail: string }).detail).toContain(
      'memo is not bound to this challenge',
    )
    expect(broadcastOnChain().length).toBe(broadcasts)
  })

  test('attack: one credential sent twice at once is broadcast once and buys one task', async () => {
    const { body, authorization, raw } = await genuineCredential()
    const before = await taskCount()
    const answers = await Promise.all([1, 2].map(() => fetch(row12(), json(body, { authorization }))))
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses).toContain(201)
    expect(await taskCount()).toBe(before + 1)
    const sent = broadcastOnChain().filter((bytes) => keccak256(bytes) === keccak256(raw))
    expect(sent.length).toBe(1)
  })

  test('a paid pull order makes one simulation and one broadcast on the MPP network', async () => {
    const { body, authorization } = await genuineCredential()
    const from = node.calls.length
    const answer = await fetch(row12(), json(body, { authorization }))
    expect(answer.status).toBe(201)
    // Only a charge simulates or sends; the re-check passes of earlier orders may read receipts and blocks meanwhile.
    const methods = node.calls.slice(from).map((call) => call.method)
    expect(methods.filter((method) => method === 'eth_call')).toHaveLength(1)
    expect(methods.filter((method) => method.startsWith('eth_sendRawTransaction'))).toHaveLength(1)
  })
})

// Attack: a payer (or an observer) hands the market the hash of a transaction already on the chain (push mode) that is
// not the payment its genuine challenge asks, each checked by the market's own verification of hash credentials
// (packages/core/src/payments/MppReceipt.ts): the transaction is the victim client's own for a challenge, changed,
// signed again by the same payer and mined by the node before the credential is sent.
describe('MPP credentials: the market checks each part of a hash credential’s receipt once', () => {
  type Receipt = Parameters<Parameters<ScriptedTempo['tamperNextReceipt']>[0]>[0]
  /** The source an mppx client names in its credential: the payer's did:pkh on `chainId`. */
  const sourceOf = (payer: Hex, chainId = node.chain.id) => `did:pkh:eip155:${chainId}:${payer}`

  /**
   * The victim's transaction for challenge `signedFor`, changed by `change` and signed again, and a hash credential
   * naming it under challenge `under` (default the same one). `mine` sends it to the node first (the receipt changed by
   * `tamper`, as a node that lies); without it, the transaction is not on the chain yet.
   */
  async function pushed(
    signedFor: Awaited<ReturnType<typeof attackerChallenge>>,
    options: {
      under?: Awaited<ReturnType<typeof attackerChallenge>>
      change?: (transaction: Signed) => Signed
      mine?: boolean
      tamper?: (receipt: Receipt) => void
      source?: string
    } = {},
  ) {
    const { resigned } = await victimResigned(signedFor, options.change ?? ((transaction) => transaction))
    const hash = keccak256(resigned)
    const send = async () => {
      await node
        .client('victim')
        .request({ method: 'eth_sendRawTransactionSync', params: [resigned] } as never)
    }
    if (options.mine !== false) {
      if (options.tamper) node.tamperNextReceipt(options.tamper)
      await send()
    }
    const authorization = Credential.serialize(
      Credential.from({
        challenge: options.under ?? signedFor,
        payload: { type: 'hash', hash },
        source: options.source ?? sourceOf(tempoPayer(2).address),
      }),
    )
    return { authorization, hash, send }
  }

  /** Sends `authorization` for `body` and expects it refused: no 201, no receipt, no task. */
  async function expectRefused(body: unknown, authorization: string, status: number | null = 402) {
    const before = await taskCount()
    const answer = await fetch(row12(), json(body, { authorization }))
    const text = await answer.text()
    if (status === null) expect(answer.status, text).not.toBe(201)
    else expect(answer.status, text).toBe(status)
    expect(answer.headers.get('payment-receipt')).toBeNull()
    expect(await taskCount()).toBe(before)
    return text
  }

  test('a genuine hash credential pays its order once, and its payer is who the receipt names', async () => {
    const body = victimOrder()
    const { authorization, hash } = await pushed(await attackerChallenge(row12(), body))
    const answer = await fetch(row12(), json(body, { authorization }))
    expect(answer.status).toBe(201)
    expect(((await answer.json()) as { payment: { tx_hash: Hex } }).payment.tx_hash).toBe(hash)
  })

  const lying: Record<string, (receipt: Receipt) => void> = {
    'whose transfer was paid by another account than the transaction’s sender': (receipt) => {
      for (const log of receipt.logs)
        log.topics[1] = `0x${'00'.repeat(12)}${tempoPayer(5).address.slice(2)}` as Hex
    },
    'that reverted (its logs kept)': (receipt) => {
      receipt.status = '0x0'
    },
    'answered by the node as another transaction’s receipt': (receipt) => {
      receipt.transactionHash = keccak256(receipt.transactionHash)
    },
  }
  for (const [name, tamper] of Object.entries(lying)) {
    test(`attack: the hash of a transaction ${name} pays nothing`, async () => {
      const body = victimOrder()
      const { authorization } = await pushed(await attackerChallenge(row12(), body), { tamper })
      await expectRefused(body, authorization)
    })
  }

  test('attack: the hash of someone else’s transfer, named as the attacker’s own (its source), pays nothing', async () => {
    const body = victimOrder()
    const { authorization } = await pushed(await attackerChallenge(row12(), body), {
      source: sourceOf(tempoPayer(3).address),
    })
    await expectRefused(body, authorization)
  })

  test('attack: a hash credential whose source names another chain pays nothing', async () => {
    const body = victimOrder()
    const { authorization } = await pushed(await attackerChallenge(row12(), body), {
      source: sourceOf(tempoPayer(2).address, node.chain.id + 1),
    })
    await expectRefused(body, authorization)
  })

  const tampers = {
    'pays another wallet': (request: Record<string, unknown>) => ({
      ...request,
      recipient: tempoPayer(4).address,
    }),
    'pays half the price': (request: Record<string, unknown>) => ({
      ...request,
      amount: String(BigInt(String(request.amount)) / 2n),
    }),
  }
  for (const [name, tamper] of Object.entries(tampers)) {
    test(`attack: the hash of a mined transfer that ${name}, under the genuine challenge its memo names, pays nothing`, async () => {
      const body = victimOrder()
      const genuine = await attackerChallenge(row12(), body)
      const { authorization } = await pushed(
        { ...genuine, request: tamper(genuine.request) },
        { under: genuine },
      )
      const text = await expectRefused(body, authorization)
      expect(text).toContain('no matching transfer')
    })
  }

  test('attack: the hash of a mined transfer of another token pays nothing', async () => {
    const body = victimOrder()
    const { authorization } = await pushed(await attackerChallenge(row12(), body), {
      change: (transaction) => ({
        ...transaction,
        calls: transaction.calls.map((call) => ({ ...call, to: OTHER_TOKEN })),
      }),
    })
    expect(await expectRefused(body, authorization)).toContain('no matching transfer')
  })

  test('attack: the hash of a mined transfer whose memo names another challenge of the same order pays nothing', async () => {
    const body = victimOrder()
    const first = await attackerChallenge(row12(), body)
    const second = await attackerChallenge(row12(), body)
    const { authorization } = await pushed(first, { under: second })
    expect(await expectRefused(body, authorization)).toContain('memo is not bound to this challenge')
  })

  test('attack: one hash credential sent twice at once buys one task', async () => {
    const body = victimOrder()
    const { authorization } = await pushed(await attackerChallenge(row12(), body))
    const before = await taskCount()
    const answers = await Promise.all([1, 2].map(() => fetch(row12(), json(body, { authorization }))))
    const bodies = (await Promise.all(answers.map((answer) => answer.json()))) as { task_id?: string }[]
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1)
    // The other is refused (the hash is claimed) or, when the first was done, answered the same task.
    const ids = new Set(bodies.map((one) => one.task_id).filter(Boolean))
    expect(ids.size).toBe(1)
    expect(await taskCount()).toBe(before + 1)
  })

  test('attack: a hash already used for an earlier order pays no other order', async () => {
    const earlier = victimOrder()
    const { authorization, hash } = await pushed(await attackerChallenge(row12(), earlier))
    expect((await fetch(row12(), json(earlier, { authorization }))).status).toBe(201)
    const later = victimOrder()
    const reused = Credential.serialize(
      Credential.from({
        challenge: await attackerChallenge(row12(), later),
        payload: { type: 'hash', hash },
        source: sourceOf(tempoPayer(2).address),
      }),
    )
    await expectRefused(later, reused)
    // The earlier order's own credential again answers the task it paid for, and makes none.
    const before = await taskCount()
    expect((await fetch(row12(), json(earlier, { authorization }))).status).toBe(200)
    expect(await taskCount()).toBe(before)
  })

  test('attack: the hash of a transaction not yet mined pays nothing and claims nothing: once mined, it pays', async () => {
    const body = victimOrder()
    const { authorization, send, hash } = await pushed(await attackerChallenge(row12(), body), {
      mine: false,
    })
    const waiting = await fetch(row12(), json(body, { authorization }))
    // A 503 that tells a push-mode client what to do: the same credential again after Retry-After, no new payment.
    expect(waiting.status).toBe(503)
    expect(Number(waiting.headers.get('retry-after'))).toBeGreaterThan(0)
    const problem = (await waiting.json()) as { code: string; detail: string }
    expect(problem.code).toBe('chain_unavailable')
    expect(problem.detail).toContain(`Transaction ${hash} is not mined yet`)
    expect(problem.detail).toContain('the same transaction hash')
    expect(problem.detail).not.toContain('nothing was sent')
    await expectRefused(body, authorization, null)
    await send()
    const answer = await fetch(row12(), json(body, { authorization }))
    expect(answer.status).toBe(201)
  })
})
