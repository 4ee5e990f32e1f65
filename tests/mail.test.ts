import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Email } from 'postal-mime'
import { outboxReaches, outboxRows } from './support/outbox.ts'
import { freePort, type MarketServer, startMarketServer } from './support/process.ts'
import { type CaptureRelay, captureRelay, type OrderMessage, sendMail } from './support/smtp.ts'

const MAILBOX = 'orders@market.test'
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mail-'))
const smtpPort = freePort()
const env = {
  DATABASE_URL: `file:${join(folder, 'market.db')}`,
  ORDER_MAILBOX: MAILBOX,
  SMTP_INBOUND_PORT: String(smtpPort),
  // Sender authentication (SPF, DKIM, DMARC) has its own test: tests/security/mailAbuse.test.ts.
  MAIL_AUTH: 'off',
}
let relay: CaptureRelay
let server: MarketServer
const keys: Record<string, string> = {}
let messageNumber = 0

/** An order from a buyer, with a fresh Message-ID unless one is given. */
const order = (
  subject: string,
  text: string | undefined,
  extra: Partial<OrderMessage> = {},
): OrderMessage => ({
  from: 'Ann Buyer <ann@buyer.test>',
  to: MAILBOX,
  subject,
  text,
  messageId: `<order-${++messageNumber}-${Date.now()}@buyer.test>`,
  ...extra,
})

// Waits below are on states (the outbox row, the relay's messages), never on time: a slow machine reaches each state
// later. Their bounds only turn a broken server into a failure instead of a hang; a retry after a failed attempt comes
// at most 2^(attempts-1) s later (OrderMail.ts mailRetryDelayMs), and a kill inside an attempt leaves its lease
// (CLAIM_LEASE_SECONDS, 120 s) to run out.
const REPLY_BOUND_MS = 200_000
setDefaultTimeout(REPLY_BOUND_MS + 60_000)

/** The reply the relay received to the order with this Message-ID. */
const replyTo = (messageId: string | undefined) =>
  relay.waitFor((email) => email.inReplyTo === messageId, REPLY_BOUND_MS)

const header = (email: Email, name: string) => email.headers.find((item) => item.key === name)?.value

async function api(path: string, init: RequestInit & { json?: unknown; agent?: string } = {}) {
  const headers = new Headers(init.headers)
  if (init.json !== undefined) headers.set('content-type', 'application/json')
  if (init.agent) headers.set('authorization', `Bearer ${keys[init.agent]}`)
  const response = await fetch(`${server.base}${path}`, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  })
  // biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
  const json: any = await response.json()
  return { status: response.status, json }
}

async function register(name: string, skills: unknown[]) {
  const { json } = await api('/api/agents/register', { method: 'POST', json: { name, skills } })
  keys[name] = json.apiKey
  await api(`/api/agents/${name}`, { method: 'PUT', agent: name, json: { walletAddress: WALLET } })
}

/** How many tasks the seller has, in any state. */
const taskCount = async (agent: string) =>
  (await api(`/api/agents/${agent}/tasks?status=all`, { agent })).json.total as number

const startServer = () =>
  startMarketServer({ ...env, SMTP_OUTBOUND_URL: relay.url, CHAIN_RPC_URL: 'http://127.0.0.1:9' })

beforeAll(async () => {
  relay = await captureRelay(freePort())
  server = await startServer()
  await register('scout', [
    { name: 'Deep Research', type: 'purchasable', price: 1.5, sla: '24 hours' },
    'Ping',
    'Summarize',
  ])
  await register('rival', ['Summarize'])
})

afterAll(async () => {
  server?.stop()
  await relay?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('orders by e-mail (real SMTP both ways, bun start)', () => {
  test('behavior: a paid skill ordered by name makes a pending task and a reply with its id, payment and links', async () => {
    const sent = order('Deep Research', '{"topic": "solar panels"}\n\n-- \nAnn')
    const answer = await sendMail(smtpPort, sent)
    expect(answer.response).toContain('Order taken')
    const reply = await replyTo(sent.messageId)
    const taskId = header(reply, 'x-agentmarket-task') ?? ''
    expect(taskId).toMatch(/^task_[0-9a-f]{32}$/)
    // The task id (a read credential) is in the reply only, never in the SMTP answer the sending server logs.
    expect(answer.response).not.toContain(taskId)
    expect(reply.from?.address).toBe(MAILBOX)
    expect(reply.to?.[0]?.address).toBe('ann@buyer.test')
    expect(reply.subject).toBe('Re: scout/deep-research')
    expect(header(reply, 'auto-submitted')).toBe('auto-replied')
    const self = `${server.base.replace('127.0.0.1', 'localhost')}`
    expect(reply.text).toContain(`Task:   ${taskId}`)
    expect(reply.text).toContain(`Send 1.5 USDC (1500000 base units`)
    expect(reply.text).toContain(WALLET)
    expect(reply.text).toContain(`POST ${self}/api/agents/scout/tasks/${taskId}/verify-payment`)
    expect(reply.text).toContain(`GET ${self}/api/agents/scout/tasks/${taskId}`)

    const task = await api(`/api/agents/scout/tasks/${taskId}`)
    expect(task.status).toBe(200)
    expect(task.json).toMatchObject({
      status: 'pending_payment',
      skill: 'Deep Research',
      params: { topic: 'solar panels' },
      payment: { amount: 1.5, to: WALLET },
    })
    const queue = await api('/api/agents/scout/tasks?status=all', { agent: 'scout' })
    const mine = queue.json.tasks.find((row: { task_id: string }) => row.task_id === taskId)
    expect(mine.buyer_email).toBe('ann@buyer.test')
    const feed = await api('/api/feed/live')
    expect(JSON.stringify(feed.json)).toContain('scout received an order for Deep Research')
  })

  test('behavior: the /api index and llms.txt name the order mailbox', async () => {
    const index = await api('/api')
    expect(index.json.email).toEqual({
      mailbox: MAILBOX,
      subject: expect.stringContaining('agent/skill'),
      body: expect.stringContaining('JSON params'),
    })
    const llms = await (await fetch(`${server.base}/llms.txt`)).text()
    expect(llms).toContain(`Orders by e-mail: write to ${MAILBOX}`)
    const guide = await (await fetch(`${server.base}/llms-full.txt`)).text()
    expect(guide).toContain(`E-mail: orders to ${MAILBOX}`)
    expect(guide).toContain(`To: ${MAILBOX}`)
  })

  test('behavior: "agent/slug" picks one seller; a free skill is paid at once', async () => {
    const sent = order('Re: scout/ping', '{}')
    await sendMail(smtpPort, sent)
    const reply = await replyTo(sent.messageId)
    expect(reply.text).toContain('scout can start on it now')
    expect(reply.subject).toBe('Re: scout/ping')
    const task = await api(`/api/agents/scout/tasks/${header(reply, 'x-agentmarket-task')}`)
    expect(task.json).toMatchObject({ status: 'paid', skill: 'Ping', params: {} })
  })

  test('error: unknown, ambiguous, bad JSON, empty and HTML-only orders get a reply saying what to fix, and no task', async () => {
    const before = { scout: await taskCount('scout'), rival: await taskCount('rival') }
    const cases: [OrderMessage, string, string][] = [
      [order('Time Travel', '{}'), 'unknown_skill', 'No agent sells a skill with the name in your subject'],
      [order('Summarize', '{"text": "long"}'), 'ambiguous_skill', 'rival/summarize'],
      [order('scout/deep-research', '{"topic": }'), 'invalid_json', 'The body is not valid JSON'],
      [order('Deep Research', '{“topic”: “x”}'), 'invalid_json', 'curly quotes'],
      [order('Deep Research', '  \n'), 'empty_body', 'The message body is empty'],
      [order('Deep Research', '[1, 2]'), 'invalid_json', 'one JSON object'],
      [
        order('Deep Research', undefined, { html: '<p>{"topic": "x"}</p>' }),
        'no_text_body',
        'no plain-text part',
      ],
      [order('', '{}'), 'missing_subject', 'The subject is empty'],
    ]
    for (const [message, code, words] of cases) {
      await sendMail(smtpPort, message)
      const reply = await replyTo(message.messageId)
      expect(header(reply, 'x-agentmarket-problem'), message.subject).toBe(code)
      expect(reply.text, message.subject).toContain(words)
      expect(reply.text).toContain('nothing was created and nothing is owed')
      expect(reply.text).toContain('How to order by e-mail')
      expect(header(reply, 'x-agentmarket-task')).toBeUndefined()
    }
    const ambiguous = await replyTo(cases[1]?.[0].messageId)
    expect(ambiguous.text).toContain('scout/summarize')
    expect({ scout: await taskCount('scout'), rival: await taskCount('rival') }).toEqual(before)
  })

  test('error: mail for another address is refused with 550, an oversized one with 552', async () => {
    const before = relay.messages.length
    const strangerOrder = order('Ping', '{}', { to: 'someone@market.test' })
    const stranger = sendMail(smtpPort, strangerOrder)
    expect(stranger).rejects.toMatchObject({ responseCode: 550 })
    await stranger.catch(() => {})
    expect(await outboxRows(env.DATABASE_URL, strangerOrder.messageId ?? '')).toEqual([])
    const hugeOrder = order('Deep Research', `{"topic": "${'x'.repeat(300 * 1024)}"}`)
    const huge = sendMail(smtpPort, hugeOrder)
    expect(huge).rejects.toMatchObject({ responseCode: 552 })
    await huge.catch(() => {})
    // Refused in the session, before anything is written: no reply is queued, so none can ever be sent.
    expect(await outboxRows(env.DATABASE_URL, hugeOrder.messageId ?? '')).toEqual([])
    expect(relay.messages.length).toBe(before)
  })

  test('behavior: the same message delivered twice makes one task and one reply', async () => {
    const before = await taskCount('scout')
    const sent = order('Deep Research', '{"topic": "twice"}')
    await sendMail(smtpPort, sent)
    const again = await sendMail(smtpPort, sent)
    expect(again.response).toContain('Already taken')
    await replyTo(sent.messageId)
    // One reply in the outbox, marked sent: nothing is left that could send a second.
    await outboxReaches(env.DATABASE_URL, sent.messageId ?? '', (row) => row.sentAt !== null)
    expect(await outboxRows(env.DATABASE_URL, sent.messageId ?? '')).toHaveLength(1)
    expect(relay.messages.filter(({ email }) => email.inReplyTo === sent.messageId)).toHaveLength(1)
    expect(await taskCount('scout')).toBe(before + 1)
  })

  test('behavior: a reply written while the relay is down arrives once it is back', async () => {
    await relay.stop()
    const sent = order('Ping', '{"n": 1}')
    await sendMail(smtpPort, sent)
    // An attempt was made while the relay was down, and failed: the reply waits in the outbox.
    const waiting = await outboxReaches(
      env.DATABASE_URL,
      sent.messageId ?? '',
      (row) => row.lastError !== null,
    )
    expect(waiting.sentAt).toBeNull()
    expect(relay.messages.some(({ email }) => email.inReplyTo === sent.messageId)).toBe(false)
    await relay.start()
    const reply = await replyTo(sent.messageId)
    expect(reply.text).toContain('Your order is in')
  })

  test('behavior: a reply taken just before the server is killed is sent by the next start', async () => {
    await relay.stop()
    const sent = order('Deep Research', '{"topic": "crash"}')
    const answer = await sendMail(smtpPort, sent)
    expect(answer.response).toContain('Order taken')
    // Killed between attempts (a failed one recorded, none leased), so the next start finds it due soon.
    await outboxReaches(
      env.DATABASE_URL,
      sent.messageId ?? '',
      (row) => row.lastError !== null && row.leasedUntil === null && row.sentAt === null,
    )
    server.process.kill('SIGKILL')
    await server.process.exited
    await relay.start()
    server = await startServer()
    const reply = await replyTo(sent.messageId)
    expect(reply.text).toContain('Your order is in')
  })
})
