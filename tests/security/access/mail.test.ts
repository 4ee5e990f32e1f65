import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import type { Email } from 'postal-mime'
import {
  BUYER_HEADERS,
  MAIL_OPERATIONS,
  type MailOperationId,
} from '../../../packages/server/src/mail/operations.ts'
import { jsonCaller } from '../../support/examples.ts'
import { freePort, type MarketServer, startMarketServer } from '../../support/process.ts'
import { type CaptureRelay, captureRelay, type OrderMessage, sendMail } from '../../support/smtp.ts'
import { MAIL_ACCESS, MAIL_PRINCIPALS, type MailOutcome, type MailPrincipal } from './mailMatrix.ts'
import { buildWorld, type World, type WorldAgent } from './world.ts'

// The e-mail interface of the access matrix (issue 37, mechanism 1): every operation of the order mailbox
// (packages/server/src/mail/operations.ts), sent by every principal as one real SMTP message on loopback to `bun start`'s
// listener, held to its cell in mailMatrix.ts: a task made or not (read back over HTTP), the reply's
// X-Agentmarket-Problem, and nothing in the SMTP answer or the reply that its sender must not see. The world is the
// HTTP matrix's (world.ts): its seller has a spending budget, so it is the buyer agent mail names; orders go to the
// other seller (the shop).

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any

const MARKET = 'https://market.test'
const MAILBOX = 'orders@market.test'
const TASK_ID = /task_[0-9a-f]{32}/g
const ADDRESS = /[^\s<>"'(),;:]+@[^\s<>"'(),;:]+\.[a-z]+/gi

/** Each principal's From address: its own domain, so an address in a reply tells whose it is. */
const ADDRESSES = Object.fromEntries(
  MAIL_PRINCIPALS.map((who) => [who, `${who.toLowerCase()}@${who.toLowerCase()}.senders.test`]),
) as Record<MailPrincipal, string>

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mail-matrix-'))
const databaseUrl = `file:${join(folder, 'market.db')}`
let server: MarketServer
let relay: CaptureRelay
let smtpPort: number
let world: World
/** The shop every mail orders from, and an agent without a budget (its name and key). */
let shop: WorldAgent
let bystander: WorldAgent
/** The earlier sender's order: its Message-ID, its reply's, and the task it made. */
let earlier: { messageId: string; replyId: string; task: string }
let messages = 0

/** A Message-ID nobody used. */
const freshId = () => `<cell-${++messages}-${crypto.randomUUID()}@ids.test>`

/** What a principal puts in the Agentmarket-Buyer headers: the agent it names and the key it presents. */
function credentialsOf(who: MailPrincipal): { name?: string; key?: string } {
  const buyerAgent = world.seller
  const credentials: Record<MailPrincipal, { name?: string; key?: string }> = {
    anonymous: {},
    earlierSender: {},
    buyerAgent: { name: buyerAgent.name, key: buyerAgent.key },
    otherAgentKey: { name: buyerAgent.name, key: bystander.key },
    wrongKey: {
      name: buyerAgent.name,
      key: `amk_${'0'.repeat(32)}${crypto.randomUUID().replaceAll('-', '')}`,
    },
    noKey: { name: buyerAgent.name },
    selfOrder: { name: shop.name, key: shop.key },
    unbudgetedAgent: { name: bystander.name },
    keyWithoutName: { key: buyerAgent.key },
  }
  return credentials[who]
}

/** The message `who` sends for `operation`: every one orders the shop's paid skill. */
function messageOf(operation: MailOperationId, who: MailPrincipal): OrderMessage {
  const { name, key } = credentialsOf(who)
  const headers = {
    ...(name !== undefined && { [BUYER_HEADERS.name]: name }),
    ...(key !== undefined && { [BUYER_HEADERS.key]: key }),
  }
  const base = { from: ADDRESSES[who], to: MAILBOX, text: '{"topic": "matrix"}', headers }
  const messages: Record<MailOperationId, () => OrderMessage> = {
    order: () => ({ ...base, subject: `${shop.name}/report`, messageId: freshId() }),
    // The earlier sender's thread, quoted: its order's and its reply's Message-IDs.
    reply: () => ({
      ...base,
      subject: `Re: ${shop.name}/report`,
      messageId: freshId(),
      inReplyTo: earlier.replyId,
      references: [earlier.messageId, earlier.replyId],
    }),
    redelivery: () => ({ ...base, subject: `${shop.name}/report`, messageId: earlier.messageId }),
  }
  return messages[operation]()
}

/** How many of the shop's tasks exist, in any state. */
const shopTasks = async () =>
  (await world.call('GET', `/api/agents/${shop.name}/tasks?status=all`, { key: shop.key })).json
    .total as number

/** The shop's queue row of `task` (the seller's read: buyer and buyer_email). */
async function queueRow(task: string): Promise<Json> {
  const queue = await world.call('GET', `/api/agents/${shop.name}/tasks?status=all&limit=100`, {
    key: shop.key,
  })
  return queue.json.tasks.find((row: Json) => row.task_id === task)
}

/** The replies in the outbox to `messageId` addressed to `to` (read from the database: a repeat writes none). */
async function outboxReplies(messageId: string, to: string): Promise<number> {
  const database = createClient({ url: databaseUrl })
  try {
    const { rows } = await database.execute({
      sql: 'select count(*) as n from outbox where in_reply_to = ? and to_address = ?',
      args: [messageId, to],
    })
    return Number(rows[0]?.n ?? 0)
  } finally {
    database.close()
  }
}

const header = (email: Email, name: string) => email.headers.find((item) => item.key === name)?.value

beforeAll(async () => {
  relay = await captureRelay(freePort())
  smtpPort = freePort()
  server = await startMarketServer({
    DATABASE_URL: databaseUrl,
    BASE_URL: MARKET,
    ORDER_MAILBOX: MAILBOX,
    SMTP_INBOUND_PORT: String(smtpPort),
    SMTP_OUTBOUND_URL: relay.url,
    // Sender authentication (SPF, DKIM, DMARC) is tests/security/mailAbuse.test.ts's: here the From is the principal.
    MAIL_AUTH: 'off',
    // The payment chain is a closed port: nothing here pays.
    CHAIN_RPC_URL: `http://127.0.0.1:${freePort()}`,
  })
  world = await buildWorld(jsonCaller(server.base), MARKET)
  shop = world.otherSeller
  bystander = await world.freshAgent({ paired: false })
  const first = { ...messageOf('order', 'earlierSender'), messageId: freshId() }
  await sendMail(smtpPort, first)
  const reply = await replyOf(first)
  earlier = {
    messageId: first.messageId,
    replyId: reply.messageId ?? '',
    task: header(reply, 'x-agentmarket-task') ?? '',
  }
  expect(earlier.task).toMatch(/^task_[0-9a-f]{32}$/)
}, 300_000)

afterAll(async () => {
  server?.stop()
  await relay?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/**
 * Nothing in the SMTP answer or the reply that `who` must not see: no secret of the world (API keys, task ids, webhook
 * secrets and URLs, the invite and pairing codes), no key or webhook secret at all (not even the one it sent), no task
 * id but the one its message made, no other sender's address.
 */
function expectNoLeak(who: MailPrincipal, answer: string, reply: Email, own: string | null) {
  const everything = `${answer}\n${reply.subject}\n${reply.text}\n${JSON.stringify(reply.headers)}`
  for (const secret of world.secrets)
    expect(everything.includes(secret.value), `the reply shows ${who} ${secret.label}`).toBe(false)
  expect(everything, 'the reply holds an API key').not.toMatch(/amk_[0-9a-f]{64}/)
  expect(everything, 'the reply holds a webhook secret').not.toContain('whsec_')
  const shown = [...everything.matchAll(TASK_ID)].map(([id]) => id).filter((id) => id !== own)
  expect(shown, `task ids shown to ${who} that its message did not make`).toEqual([])
  for (const other of MAIL_PRINCIPALS)
    if (other !== who) expect(everything, `${other}'s address`).not.toContain(ADDRESSES[other])
  // The text speaks to its sender only: the only addresses in it are the sender's and the mailbox's.
  const addresses = [...`${reply.subject}\n${reply.text}`.matchAll(ADDRESS)].map(([found]) =>
    found.toLowerCase(),
  )
  expect(addresses.filter((found) => found !== ADDRESSES[who] && found !== MAILBOX)).toEqual([])
}

/** The reply the relay got to `message` (from the mailbox to its sender). */
const replyOf = (message: OrderMessage) =>
  relay.waitFor(
    (email) => email.inReplyTo === message.messageId && email.to?.[0]?.address === message.from,
    60_000,
  )

/** Holds one message's result to its cell. */
async function expectCell(operation: MailOperationId, who: MailPrincipal, cell: MailOutcome) {
  const message = messageOf(operation, who)
  const messageId = message.messageId ?? ''
  const before = { tasks: await shopTasks(), replies: await outboxReplies(messageId, message.from) }
  const answer = (await sendMail(smtpPort, message)).response
  // The reply is in the outbox before the 250: read there first, so a wrong cell fails without waiting for mail.
  const replies = (await outboxReplies(messageId, message.from)) - before.replies
  if ('repeat' in cell) {
    expect(answer).toContain('Already taken')
    expect(replies, 'a repeat is not answered again').toBe(0)
    expect(await shopTasks()).toBe(before.tasks)
    expect([...answer.matchAll(TASK_ID)]).toEqual([])
    return
  }
  expect(replies, `${answer}: one reply to the sender`).toBe(1)
  if (cell.made === 'nothing') {
    expect(answer).toContain('the reply explains why no order was placed')
    expect(await shopTasks(), 'a refused mail made a task').toBe(before.tasks)
    const reply = await replyOf(message)
    expect(header(reply, 'x-agentmarket-problem')).toBe(cell.problem)
    expect(header(reply, 'x-agentmarket-task')).toBeUndefined()
    expectNoLeak(who, answer, reply, null)
    return
  }
  // The SMTP answer names no task (sending servers log it); the reply carries the id.
  expect(answer).toContain('Order taken; the reply carries its task id')
  expect([...answer.matchAll(TASK_ID)]).toEqual([])
  expect(await shopTasks()).toBe(before.tasks + 1)
  const reply = await replyOf(message)
  const task = header(reply, 'x-agentmarket-task') ?? ''
  expect(header(reply, 'x-agentmarket-problem')).toBeUndefined()
  expect(task).toMatch(/^task_[0-9a-f]{32}$/)
  expect(task).not.toBe(earlier.task)
  // The task is the sender's: its e-mail, and as buyer the agent its headers named (nobody without a name).
  const row = await queueRow(task)
  expect(row).toMatchObject({ buyer_email: message.from, buyer: credentialsOf(who).name ?? null })
  expectNoLeak(who, answer, reply, task)
}

describe('the mail matrix covers every mail operation and principal', () => {
  test('behavior: every operation of the order mailbox has a cell for every principal; the matrix names no other', () => {
    const operations = Object.keys(MAIL_OPERATIONS).sort()
    expect(Object.keys(MAIL_ACCESS).sort(), 'mail operations without a matrix row').toEqual(operations)
    for (const operation of operations)
      expect(Object.keys(MAIL_ACCESS[operation as MailOperationId]).sort(), `${operation}'s cells`).toEqual(
        [...MAIL_PRINCIPALS].sort(),
      )
  })
})

for (const operation of Object.keys(MAIL_OPERATIONS) as MailOperationId[])
  describe(`access by mail: ${operation}`, () => {
    for (const who of MAIL_PRINCIPALS) {
      const cell = MAIL_ACCESS[operation][who]
      const outcome = cell.made === 'task' ? 'a task' : 'repeat' in cell ? 'a repeat' : cell.problem
      test(
        `${operation} as ${who}: ${outcome}`,
        () => expectCell(operation, who, cell),
        // A wide bound: the verdict is the cell's outcome, never the speed of a busy machine.
        120_000,
      )
    }
  })
