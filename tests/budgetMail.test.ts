import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Email } from 'postal-mime'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedBudget } from '../packages/server/src/testing/budgets.ts'
import { signedRequestHeaders } from '../packages/server/src/testing/http.ts'
import { freePort, type MarketServer, startMarketServer } from './support/process.ts'
import { type CaptureRelay, captureRelay, sendMail } from './support/smtp.ts'

// Orders by e-mail that name a buyer agent (Agentmarket-Buyer) are held to its budget like every other channel: real
// SMTP on loopback into a server process, replies caught by a relay.
const MAILBOX = 'orders@market.test'
const BASE_URL = 'https://mail-budgets.market.test'
const owner = privateKeyToAccount(generatePrivateKey())
const folder = mkdtempSync(join(tmpdir(), 'budget-mail-'))
// Drawn just before the server starts (beforeAll): another process can take a port drawn seconds earlier.
let smtpPort = 0
let relay: CaptureRelay
let server: MarketServer
let buyerKey = ''
let serial = 0

/** A JSON request to the server; status and body. */
async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  // biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
  const json: any = await response.json()
  return { status: response.status, json }
}

/** Mails an order of the seller's 50-USDC report with `headers`; the reply the relay got. */
async function mailOrder(headers: Record<string, string>): Promise<Email> {
  const messageId = `<budget-${++serial}-${Date.now()}@buyer.test>`
  await sendMail(smtpPort, {
    from: 'Bot Operator <ops@buyer.test>',
    to: MAILBOX,
    subject: 'seller/report',
    text: '{}',
    messageId,
    headers,
  })
  return relay.waitFor((email) => email.inReplyTo === messageId)
}

const problemOf = (email: Email) => email.headers.find((item) => item.key === 'x-agentmarket-problem')?.value

beforeAll(async () => {
  relay = await captureRelay(freePort())
  smtpPort = freePort()
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    BASE_URL,
    ORDER_MAILBOX: MAILBOX,
    SMTP_INBOUND_PORT: String(smtpPort),
    SMTP_OUTBOUND_URL: relay.url,
    MAIL_AUTH: 'off',
  })
  const buyer = await send('POST', '/api/agents/register', { name: 'buyer-bot' })
  buyerKey = buyer.json.apiKey
  const seller = await send('POST', '/api/agents/register', {
    name: 'seller',
    skills: [{ name: 'Report', type: 'purchasable', price: 50 }],
  })
  await send(
    'PUT',
    '/api/agents/seller',
    { walletAddress: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' },
    { authorization: `Bearer ${seller.json.apiKey}` },
  )
  const path = '/api/community/users/owner/pair-agent'
  const pairing = { pairingCode: buyer.json.pairingCode }
  const proof = await signedRequestHeaders(
    owner,
    { market: BASE_URL, method: 'POST', path, body: JSON.stringify(pairing) },
    new Date(),
  )
  expect((await send('POST', path, pairing, { 'x-wallet-address': owner.address, ...proof })).status).toBe(
    200,
  )
  const now = Date.now()
  const budget = await signedBudget(
    owner,
    {
      agent: 'buyer-bot',
      perTaskMax: 50,
      perDayMax: 100,
      expiresAt: new Date(now + 86_400_000),
      issuedAt: new Date(now - 1000),
    },
    BASE_URL,
  )
  expect((await send('PUT', '/api/agents/buyer-bot/budget', budget)).status).toBe(200)
})

afterAll(async () => {
  server?.stop()
  await relay?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('budgets on orders by e-mail', () => {
  test('attack: a mail naming a budgeted buyer without its key, or with a wrong one, places nothing', async () => {
    expect(problemOf(await mailOrder({ 'Agentmarket-Buyer': 'buyer-bot' }))).toBe('buyer_key_required')
    expect(
      problemOf(await mailOrder({ 'Agentmarket-Buyer': 'buyer-bot', 'Agentmarket-Buyer-Key': 'amk_wrong' })),
    ).toBe('buyer_key_required')
    expect(problemOf(await mailOrder({ 'Agentmarket-Buyer': 'not a name!' }))).toBe('invalid_buyer')
    const budget = await send('GET', '/api/agents/buyer-bot/budget', undefined, {
      authorization: `Bearer ${buyerKey}`,
    })
    expect(budget.json).toMatchObject({ held_today: 0, remaining_today: 100 })
  })

  test('behavior: with its key the mail orders within the budget; past the day the reply says budget_exceeded', async () => {
    const headers = { 'Agentmarket-Buyer': 'buyer-bot', 'Agentmarket-Buyer-Key': buyerKey }
    for (let index = 0; index < 2; index++) {
      const reply = await mailOrder(headers)
      expect(problemOf(reply)).toBeUndefined()
      expect(reply.headers.find((item) => item.key === 'x-agentmarket-task')?.value).toMatch(/^task_/)
    }
    const refused = await mailOrder(headers)
    expect(problemOf(refused)).toBe('budget_exceeded')
    expect(refused.text).toContain('budget')
    const budget = await send('GET', '/api/agents/buyer-bot/budget', undefined, {
      authorization: `Bearer ${buyerKey}`,
    })
    expect(budget.json).toMatchObject({ held_today: 100, remaining_today: 0 })
  }, 300_000)
})
