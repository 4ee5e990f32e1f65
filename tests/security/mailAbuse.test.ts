import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTransport } from 'nodemailer'
import { startTestDns, type TestDns } from '../support/dns.ts'
import { jsonCaller } from '../support/examples.ts'
import { freePort, startMarketServer } from '../support/process.ts'
import { captureRelay, smtpSession } from '../support/smtp.ts'

// Attack: mail to the order mailbox as an attacker would send it: a forged From (to turn the mailbox into a relay of
// replies to someone else), a message built to make the parser backtrack, a flood, and idle connections held open. Each test drives it through
// bun start over real SMTP, with sender checks (mailauth) asking a DNS server on loopback.

const MAILBOX = 'orders@market.test'
const dkimKey = generateKeyPairSync('rsa', { modulusLength: 1024 })
const dkimPublic = dkimKey.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')
const dkimPrivate = dkimKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()

/** The DNS of the buyers' domains: one with DMARC p=reject signing with DKIM, one without DMARC, the attacker's. */
const RECORDS: Record<string, string[]> = {
  'victim.test': ['v=spf1 -all'],
  '_dmarc.victim.test': ['v=DMARC1; p=reject'],
  'mail._domainkey.victim.test': [`v=DKIM1; k=rsa; p=${dkimPublic}`],
  'plain.test': ['v=spf1 ip4:127.0.0.0/8 -all'],
  'attacker.test': ['v=spf1 ip4:127.0.0.0/8 -all'],
}

type Envelope = { from: string; to: string[] }
type Outgoing = { from: string; subject: string; text: string; envelope?: Envelope; messageId?: string }

/** Sends one message to `port` as a mail server at `localAddress` would, DKIM-signing it for victim.test if asked. */
async function deliver(
  port: number,
  message: Outgoing,
  options: { localAddress?: string; dkim?: boolean } = {},
) {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    ...(options.dkim
      ? { dkim: { domainName: 'victim.test', keySelector: 'mail', privateKey: dkimPrivate } }
      : {}),
  })
  try {
    return await transport.sendMail({ to: MAILBOX, ...message })
  } finally {
    transport.close()
  }
}

/** The SMTP answer code of a delivery: 250 when taken, else the server's refusal code. */
/** mailServer(`extra`) started before the enclosing suite's tests and stopped after them; read it in tests. */
function mailServerForSuite(extra: Record<string, string> = {}) {
  const market = {} as Awaited<ReturnType<typeof mailServer>>
  beforeAll(async () => {
    Object.assign(market, await mailServer(extra))
  })
  afterAll(async () => {
    market.server?.stop()
    await market.relay?.stop()
  })
  return market
}

/** A ping order for scout from `from`, with the rest of the message (envelope, messageId) in `extra`. */
const ping = (from: string, extra: Partial<Outgoing> = {}): Outgoing => ({
  from,
  subject: 'scout/ping',
  text: '{}',
  ...extra,
})

/** A ping order whose envelope sender is its From address, as a plain mail client sends it. */
const sentBy = (sender: string) => ping(sender, { envelope: { from: sender, to: [MAILBOX] } })

async function answerCode(port: number, message: Outgoing, options?: Parameters<typeof deliver>[2]) {
  try {
    await deliver(port, message, options)
    return 250
  } catch (error) {
    return (error as { responseCode?: number }).responseCode ?? 0
  }
}

let dns: TestDns
const folders: string[] = []

/** bun start with the order mailbox on, sender checks against the loopback DNS, replies to a capture relay. */
async function mailServer(extra: Record<string, string> = {}) {
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mail-attack-'))
  folders.push(folder)
  const smtpPort = freePort()
  const relay = await captureRelay(freePort())
  const server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    ORDER_MAILBOX: MAILBOX,
    SMTP_INBOUND_PORT: String(smtpPort),
    SMTP_OUTBOUND_URL: relay.url,
    MAIL_DNS_SERVERS: dns.server,
    ...extra,
  })
  const call = jsonCaller(server.base)
  await call('POST', '/api/agents/register', {
    body: { name: 'scout', skills: [{ name: 'Ping', type: 'free' }] },
  })
  return { server, relay, smtpPort, call }
}

beforeAll(async () => {
  dns = await startTestDns(RECORDS)
})

afterAll(async () => {
  await dns?.stop()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

describe('the order mailbox trusts only senders their domain vouches for (MAIL_AUTH=enforce, the default)', () => {
  const market = mailServerForSuite()

  const tasks = async () =>
    (await market.call('GET', '/api/agents/scout/tasks?status=all')).json.total as number

  test('attack: a forged From of a DMARC domain (p=reject) gets 550, makes no task and sends no reply', async () => {
    const before = await tasks()
    const forged = ping('ceo@victim.test', { envelope: { from: 'bounce@attacker.test', to: [MAILBOX] } })
    expect(await answerCode(market.smtpPort, forged)).toBe(550)
    expect(
      await answerCode(market.smtpPort, { ...forged, envelope: { from: 'ceo@victim.test', to: [MAILBOX] } }),
    ).toBe(550)
    const noDmarc = { ...forged, from: 'boss@plain.test' }
    expect(await answerCode(market.smtpPort, noDmarc)).toBe(550)
    await Bun.sleep(300)
    expect(market.relay.messages.length).toBe(0)
    expect(await tasks()).toBe(before)
  })

  test('behavior: mail its domain signs (DKIM, DMARC pass) or sends (aligned SPF, no DMARC) is taken and answered', async () => {
    const signed = ping('ann@victim.test', { messageId: '<signed@victim.test>' })
    const taken = await deliver(market.smtpPort, signed, { dkim: true })
    expect(taken.response).toContain('Order taken')
    const reply = await market.relay.waitFor((email) => email.inReplyTo === '<signed@victim.test>')
    expect(reply.to?.[0]?.address).toBe('ann@victim.test')
    const plain = await deliver(market.smtpPort, sentBy('bob@plain.test'))
    expect(plain.response).toContain('Order taken')
  })

  test('attack: the SMTP answer, which crosses the network in clear and sits in the sending server’s logs, carries no task id (a read credential); the reply does', async () => {
    const order = ping('ann@victim.test', { messageId: '<no-id-in-answer@victim.test>' })
    const taken = await deliver(market.smtpPort, order, { dkim: true })
    expect(taken.response).toContain('250 2.0.0 Order taken')
    expect(taken.response).not.toMatch(/task_[0-9a-f]{32}/)
    const reply = await market.relay.waitFor((email) => email.inReplyTo === order.messageId)
    const taskId = reply.headers.find((item) => item.key === 'x-agentmarket-task')?.value
    expect(taskId).toMatch(/^task_[0-9a-f]{32}$/)
    expect(taken.response).not.toContain(String(taskId))
  })

  test('attack: a 200 KB message of whitespace and prefixes is answered at once while the API stays responsive', async () => {
    // About 100 KB on the wire, the subject folded into 62 KB of the 64 KiB a header may hold (a longer one is refused
    // with 552 before any parser runs: tests/security/costGuard.test.ts).
    const subject = `re${' '.repeat(60_000)}x`
    const text = `${'>\t \n'.repeat(4_000)}{${' '.repeat(4_000)}`
    const health = async () => {
      const started = performance.now()
      const answer = await fetch(`${market.server.base}/api/community/health`)
      return { ok: answer.ok, ms: performance.now() - started }
    }
    const sending = answerCode(market.smtpPort, {
      from: 'bob@plain.test',
      subject,
      text,
      envelope: { from: 'bob@plain.test', to: [MAILBOX] },
    })
    const probes = []
    for (let i = 0; i < 10; i++) {
      probes.push(await health())
      await Bun.sleep(20)
    }
    expect(await sending).toBe(250)
    // Before the fix this message held the event loop for seconds; a bound 50 times the usual answer still fails it.
    for (const probe of probes) expect(probe.ok && probe.ms < 1_000).toBe(true)
    const reply = await market.relay.waitFor((email) => email.subject === 'Re: your order (not placed)')
    expect(reply.text).not.toContain('re   ')
  })

  test('attack: no reply carries text the sender chose (subject, JSON tokens), so replies relay nothing', async () => {
    await deliver(market.smtpPort, {
      from: 'bob@plain.test',
      subject: 'Cheap watches at spam.example',
      text: '{"offer": visit-spam.example}',
      messageId: '<spam@plain.test>',
      envelope: { from: 'bob@plain.test', to: [MAILBOX] },
    })
    const reply = await market.relay.waitFor((email) => email.inReplyTo === '<spam@plain.test>')
    expect(reply.subject).toBe('Re: your order (not placed)')
    expect(`${reply.subject}\n${reply.text}`).not.toContain('spam.example')
  })
})

describe('the order mailbox limits mail per client address, per sender and in total', () => {
  const market = mailServerForSuite({
    RATE_LIMITS: 'on',
    RATE_LIMIT_POLICIES: 'mail=3/3600,mail_total=10/3600',
  })

  const from = (localAddress: string) => ({ localAddress })

  test('attack: one sender from many addresses, one address with many senders, many of both: 451 past each limit', async () => {
    // One sender, four addresses: the sender's fourth order is refused.
    const bySender = []
    for (const host of [2, 3, 4, 5])
      bySender.push(await answerCode(market.smtpPort, sentBy('ann@plain.test'), from(`127.0.0.${host}`)))
    expect(bySender).toEqual([250, 250, 250, 451])
    // One address, four senders: the address's fourth message is refused.
    const byAddress = []
    for (const name of ['b1', 'b2', 'b3', 'b4'])
      byAddress.push(await answerCode(market.smtpPort, sentBy(`${name}@plain.test`), from('127.0.0.6')))
    expect(byAddress).toEqual([250, 250, 250, 451])
    // Fresh addresses and senders: the total (10, of which 7 are spent) runs out.
    const total = []
    for (const host of [7, 8, 9, 10])
      total.push(await answerCode(market.smtpPort, sentBy(`c${host}@plain.test`), from(`127.0.0.${host}`)))
    expect(total).toEqual([250, 250, 250, 451])
    const taken = (await market.call('GET', '/api/agents/scout/tasks?status=all')).json.total
    expect(taken).toBe(9)
  })
})

describe('one address cannot close the order mailbox to others (SMTP connection limits, the defaults)', () => {
  const market = mailServerForSuite()

  test('attack: 50 connections from one address kept open with NOOPs hold 10; another address gets 220 and orders', async () => {
    // Before the fix these 50 filled the listener (maxClients 50) and everyone else was answered 421.
    const hostile = Array.from({ length: 50 }, () => smtpSession(market.smtpPort, '127.0.0.60'))
    try {
      const greetings = await Promise.all(hostile.map((session) => session.greeting))
      const kept = hostile.filter((_, index) => greetings[index]?.startsWith('220 '))
      expect(kept.length).toBe(10)
      expect(greetings.filter((line) => line.startsWith('421 ')).length).toBe(40)
      for (const session of kept) expect(await session.command('NOOP')).toStartWith('250 ')

      const honest = smtpSession(market.smtpPort, '127.0.0.61')
      expect(await honest.greeting).toStartWith('220 ')
      expect(await honest.command('QUIT')).toStartWith('221 ')
      const order = sentBy('bob@plain.test')
      const taken = await deliver(market.smtpPort, order, { localAddress: '127.0.0.62' })
      expect(taken.response).toContain('Order taken')
    } finally {
      for (const session of hostile) session.close()
    }
  })
})
