import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type OutboxEntry, payerProofTypedData } from '@agentmarket/core'
import type { Hex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { openPostgres } from '../packages/store-postgres/src/open.ts'
import { postgresStore } from '../packages/store-postgres/src/postgresStore.ts'
import { type Anvil, paymentChain, USDC_ADDRESS } from './support/anvil.ts'
import { startMigratedPostgres } from './support/postgres.ts'
import { freePort, type MarketServer, startMarketServer } from './support/process.ts'
import { sharedPostgres } from './support/sharedDatabase.ts'
import { type CaptureRelay, captureRelay } from './support/smtp.ts'
import { until } from './support/until.ts'

// A node killed while it holds claims (outbox entries it is sending, payment re-checks it is running): once their
// lease ends, another node finishes that work, and each piece exactly once.
const MARKET_URL = 'https://takeover.market.test'
const SELLER = 'takeover-seller'
const PAYMENTS = 4
const MAILS = 4
const LEASE_SECONDS = 2
const postgresServer = await startMigratedPostgres()
let anvil: Anvil
let buyer: HDAccount
let seller: HDAccount
let relay: CaptureRelay
const started: MarketServer[] = []
const blackHoles: { stop(): void }[] = []

beforeAll(async () => {
  const chain = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
  anvil = chain.anvil
  ;({ buyer, seller } = chain.accounts)
  relay = await captureRelay(freePort())
})

afterAll(async () => {
  for (const server of started) server.stop()
  for (const hole of blackHoles) hole.stop()
  anvil?.stop()
  await relay?.stop()
  await postgresServer.stop()
})

/** A TCP port that accepts connections and never answers: an RPC node or a mail relay that hangs. */
function blackHole(): string {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  blackHoles.push(server)
  return `127.0.0.1:${server.port}`
}

/** Starts a node on the shared database; it is stopped (killed) at the end. */
async function node(env: Record<string, string>): Promise<MarketServer> {
  const server = await startMarketServer({
    BASE_URL: MARKET_URL,
    CHAIN_ID: '8453',
    USDC_CONTRACT: USDC_ADDRESS,
    // Payments stay pending until the test mines: the re-checks have work to claim.
    MIN_CONFIRMATIONS: '5',
    CLAIM_LEASE_SECONDS: String(LEASE_SECONDS),
    ...env,
  })
  started.push(server)
  return server
}

/** POSTs JSON; status and body. */
async function post(server: MarketServer, path: string, body: unknown, key?: string, method = 'POST') {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${key}`
  const response = await fetch(`${server.base}${path}`, { method, headers, body: JSON.stringify(body) })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/** A reply in the outbox, as an order e-mail's reply is written. */
function reply(index: number): OutboxEntry {
  const now = new Date()
  return {
    id: `mail_takeover_${index}`,
    mail: {
      from: 'orders@takeover.market.test',
      to: `buyer-${index}@example.com`,
      subject: `Re: order ${index}`,
      text: `reply ${index}`,
      messageId: `<takeover-${index}@takeover.market.test>`,
      inReplyTo: null,
      references: [],
      headers: {},
    },
    createdAt: now,
    attempts: 0,
    nextAttemptAt: now,
    leasedUntil: null,
    sentAt: null,
    failedAt: null,
    lastError: null,
  }
}

describe('a node killed while it holds claims, on PostgreSQL', () => {
  test('behavior: another node sends each claimed reply and settles each claimed payment check, exactly once', async () => {
    const database = await sharedPostgres(postgresServer)
    const rpc = { CHAIN_RPC_URL: anvil.rpcUrl, DATABASE_URL: database.url }

    // Set-up on node A: a seller, and payments ordered with their hash while not final (pending re-checks).
    const setup = await node(rpc)
    const registered = await post(setup, '/api/agents/register', {
      name: SELLER,
      skills: [{ name: 'Deep Search', type: 'purchasable', price: '1' }],
    })
    const key = String(registered.json.apiKey)
    expect(
      (await post(setup, `/api/agents/${SELLER}`, { walletAddress: seller.address }, key, 'PUT')).status,
    ).toBe(200)
    const hashes: Hex[] = []
    for (let index = 0; index < PAYMENTS; index++)
      hashes.push(await anvil.transferUsdc(buyer, seller.address, 1_000_000n))
    for (const hash of hashes) {
      const proof = payerProofTypedData(8453, { market: MARKET_URL, agent: SELLER, task: '', txHash: hash })
      const signature = await buyer.signTypedData({ ...proof, message: { ...proof.message, txHash: hash } })
      const ordered = await post(setup, `/api/agents/${SELLER}/tasks`, {
        skill: 'deep-search',
        tx_hash: hash,
        payer_signature: signature,
      })
      expect(ordered.status).toBe(202)
    }
    setup.process.kill('SIGTERM')
    await setup.process.exited
    const store = await postgresStore(await openPostgres(database.url, { max: 2 }))
    for (let index = 0; index < MAILS; index++)
      expect(
        await store.acceptOrderMail({
          key: `takeover-${index}`,
          receivedAt: new Date(),
          task: null,
          events: [],
          reply: reply(index),
        }),
      ).toBe('accepted')
    await store.close()

    // Node B claims both kinds of work, then hangs on them (its chain node and its relay never answer), and dies.
    const doomed = await node({
      DATABASE_URL: database.url,
      CHAIN_RPC_URL: `http://${blackHole()}`,
      SMTP_OUTBOUND_URL: `smtp://${blackHole()}`,
    })
    const claimedMail = async () =>
      Number(
        (await database.rows('select count(*) as n from outbox where attempts = 1 and sent_at is null'))[0]
          ?.n,
      ) === MAILS
    const claimedChecks = async () =>
      Number(
        (
          await database.rows('select count(*) as n from tasks where status = ? and next_recheck_at > ?', [
            'pending_payment',
            Date.now() + 500,
          ])
        )[0]?.n,
      ) === PAYMENTS
    await until(
      async () => (await claimedMail()) && (await claimedChecks()),
      'node B claims every reply and every check',
      { everyMs: 50 },
    )
    doomed.process.kill('SIGKILL')
    await doomed.process.exited
    await anvil.mine(5)

    // Node C, healthy, takes the work over once the leases end.
    const takeover = await node({ ...rpc, SMTP_OUTBOUND_URL: relay.url })
    const startedAt = performance.now()
    await until(
      async () => {
        const [sent] = await database.rows('select count(*) as n from outbox where sent_at is not null')
        const [paid] = await database.rows('select count(*) as n from tasks where status = ?', ['paid'])
        return Number(sent?.n) === MAILS && Number(paid?.n) === PAYMENTS
      },
      'node C sends every reply and pays every task',
      { everyMs: 50 },
    )
    const tookMs = performance.now() - startedAt
    // A few more passes: nothing is sent or paid a second time.
    await Bun.sleep(2_500)
    const sentTo = relay.messages.flatMap(({ envelopeTo }) => envelopeTo).sort()
    expect(sentTo).toEqual(Array.from({ length: MAILS }, (_, index) => `buyer-${index}@example.com`).sort())
    expect(await database.rows('select attempts from outbox order by id')).toEqual(
      Array.from({ length: MAILS }, () => ({ attempts: 2 })),
    )
    const paidEvents = await database.rows("select data from events where kind = 'task.paid'")
    expect(paidEvents).toHaveLength(PAYMENTS)
    const paidHashes = await database.rows('select tx_hash from tasks where status = ? order by tx_hash', [
      'paid',
    ])
    expect(paidHashes.map((row) => String(row.tx_hash).toLowerCase())).toEqual(
      [...hashes].map((hash) => hash.toLowerCase()).sort(),
    )
    console.log(
      `takeover: node C finished ${MAILS} replies and ${PAYMENTS} checks ${tookMs.toFixed(0)} ms after it started (lease ${LEASE_SECONDS} s)`,
    )
    takeover.process.kill('SIGTERM')
    await database.close()
  })
})
