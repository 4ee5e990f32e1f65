import { afterEach, describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, manualClock, memoryStore, type Store } from '@agentmarket/core'
import { type SmtpSession, sendMail, smtpSession } from '../../../../tests/support/smtp.ts'
import { until } from '../../../../tests/support/until.ts'
import { readOrderMail } from './inbound.ts'
import { type OrderListener, startOrderListener } from './listener.ts'

const MAILBOX = 'orders@market.test'
const encode = (text: string) => new TextEncoder().encode(text.replace(/\n/g, '\r\n'))

describe('readOrderMail', () => {
  test('behavior: reads sender, subject, text, Message-ID and References of a MIME message', async () => {
    const raw = encode(
      [
        'From: "Ann" <ann@buyer.test>',
        `To: ${MAILBOX}`,
        'Subject: =?UTF-8?Q?Re:_=C3=9Cbersetzen?=',
        'Message-ID: <m2@buyer.test>',
        'References: <m0@buyer.test> <m1@market.test>',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: quoted-printable',
        '',
        '{"text": "gr=C3=BC=C3=9F"}',
      ].join('\n'),
    )
    expect(await readOrderMail(raw, 'bounce@buyer.test', MAILBOX)).toEqual({
      messageId: '<m2@buyer.test>',
      from: 'ann@buyer.test',
      subject: 'Re: Übersetzen',
      text: '{"text": "grüß"}\n',
      references: ['<m0@buyer.test>', '<m1@market.test>'],
    })
  })

  test('behavior: a message without a Message-ID gets one from its bytes, the same on every delivery', async () => {
    const raw = encode('From: ann@buyer.test\nSubject: ping\n\n{}')
    const first = await readOrderMail(raw, 'ann@buyer.test', MAILBOX)
    const second = await readOrderMail(raw, 'ann@buyer.test', MAILBOX)
    const other = await readOrderMail(encode('From: ann@buyer.test\nSubject: ping\n\n{"a":1}'), null, MAILBOX)
    expect(first).toMatchObject({ messageId: expect.stringMatching(/^<[0-9a-f]{64}@derived\.invalid>$/) })
    expect(second).toEqual(first)
    expect(other).toEqual({ skip: 'automated' })
  })

  test('behavior: bounces, auto-replies, list mail and mail from the mailbox itself are not answered', async () => {
    const message = (headers: string) => encode(`From: ann@buyer.test\n${headers}Subject: ping\n\n{}`)
    expect(await readOrderMail(message(''), null, MAILBOX)).toEqual({ skip: 'automated' })
    expect(await readOrderMail(message('Auto-Submitted: auto-replied\n'), 'a@b.test', MAILBOX)).toEqual({
      skip: 'automated',
    })
    expect(await readOrderMail(message('Precedence: bulk\n'), 'a@b.test', MAILBOX)).toEqual({
      skip: 'automated',
    })
    expect(await readOrderMail(message('List-Id: <news.b.test>\n'), 'a@b.test', MAILBOX)).toEqual({
      skip: 'automated',
    })
    expect(await readOrderMail(message('Auto-Submitted: no\n'), 'a@b.test', MAILBOX)).toMatchObject({
      from: 'ann@buyer.test',
    })
    const own = encode(`From: ${MAILBOX.toUpperCase()}\nSubject: ping\n\n{}`)
    expect(await readOrderMail(own, MAILBOX, MAILBOX)).toEqual({ skip: 'own_mailbox' })
    const nobody = encode('From: undisclosed-recipients:;\nSubject: ping\n\n{}')
    expect(await readOrderMail(nobody, 'not an address', MAILBOX)).toEqual({ skip: 'no_sender' })
  })
})

describe('startOrderListener', () => {
  let listener: OrderListener | null = null
  afterEach(async () => {
    await listener?.close()
    listener = null
  })

  /** A market whose store fails to record order mail while `failing.on` is true. */
  async function marketWithFlakyStore(failing: { on: boolean }) {
    const inner = memoryStore()
    const store: Store = {
      ...inner,
      acceptOrderMail: (receipt) =>
        failing.on ? Promise.reject(new Error('disk full')) : inner.acceptOrderMail(receipt),
    }
    const market = Marketplace.create({ store, config: defaultConfig('https://market.test') })
    await market.registerAgent({ name: 'scout', skills: ['Ping'] })
    return { market, store }
  }

  test('error: a store failure answers 451 and keeps nothing; the sender retrying later gets its order in', async () => {
    const failing = { on: true }
    const { market, store } = await marketWithFlakyStore(failing)
    const taken: string[] = []
    listener = await startOrderListener({
      market,
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
      onTaken: (result) => taken.push(result.outcome),
    })
    const order = {
      from: 'ann@buyer.test',
      to: MAILBOX,
      subject: 'ping',
      text: '{}',
      messageId: '<r1@b.test>',
    }
    const refused = sendMail(listener.port, order)
    expect(refused).rejects.toMatchObject({ responseCode: 451 })
    await refused.catch(() => {})
    const tasks = async () =>
      (await store.listTasks('scout', { statuses: ['paid'], order: 'history', limit: 9, offset: 0 })).total
    expect(await tasks()).toBe(0)
    expect(taken).toEqual([])

    failing.on = false
    const accepted = await sendMail(listener.port, order)
    expect(accepted.response).toContain('Order taken')
    expect(taken).toEqual(['task'])
    expect(await tasks()).toBe(1)
  })

  test('behavior: an auto-reply is accepted with 250 and makes nothing', async () => {
    const { market, store } = await marketWithFlakyStore({ on: false })
    listener = await startOrderListener({
      market,
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
    })
    const answer = await sendMail(listener.port, {
      from: 'ann@buyer.test',
      to: MAILBOX,
      subject: 'Out of office',
      text: '{}',
      headers: { 'Auto-Submitted': 'auto-replied' },
    })
    expect(answer.response).toContain('without reply (automated)')
    expect((await store.listEvents({ limit: 5 })).some((event) => event.kind === 'task.created')).toBe(false)
  })
})

describe('startOrderListener connection limits', () => {
  let listener: OrderListener | null = null
  const sessions: SmtpSession[] = []
  afterEach(async () => {
    for (const session of sessions.splice(0)) session.close()
    await listener?.close()
    listener = null
  })

  /** A raw connection from `address`, closed after the test. */
  const open = (address: string) => {
    const session = smtpSession(listener?.port ?? 0, address)
    sessions.push(session)
    return session
  }

  /** A market with the free skill Ping; `gate`, while set, holds every order mail the store is asked to accept. */
  async function market(gate: { held?: Promise<void>; entered?: () => void } = {}) {
    const inner = memoryStore()
    const store: Store = {
      ...inner,
      acceptOrderMail: async (receipt) => {
        gate.entered?.()
        await gate.held
        return inner.acceptOrderMail(receipt)
      },
    }
    const marketplace = Marketplace.create({ store, config: defaultConfig('https://market.test') })
    await marketplace.registerAgent({ name: 'scout', skills: ['Ping'] })
    return marketplace
  }

  /** Orders Ping over `session` by hand and resolves with the answer to the message. */
  async function orderOver(session: SmtpSession, from: string, messageId: string) {
    expect(await session.command('EHLO client.test')).toStartWith('250 ')
    expect(await session.command(`MAIL FROM:<${from}>`)).toStartWith('250 ')
    expect(await session.command(`RCPT TO:<${MAILBOX}>`)).toStartWith('250 ')
    expect(await session.command('DATA')).toStartWith('354 ')
    const message = [
      `From: ${from}`,
      `To: ${MAILBOX}`,
      'Subject: ping',
      `Message-ID: ${messageId}`,
      '',
      '{}',
      '.',
    ]
    return session.command(message.join('\r\n'))
  }

  /** Whether `address` can open `count` connections now (each is closed again). */
  async function admits(address: string, count: number) {
    const opened = Array.from({ length: count }, () => open(address))
    const greetings = await Promise.all(opened.map((session) => session.greeting))
    for (const session of opened) session.close()
    return greetings.every((line) => line.startsWith('220 '))
  }

  test('attack: one address opening many connections and keeping them with NOOPs leaves the mailbox open to others', async () => {
    listener = await startOrderListener({
      market: await market(),
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
      connections: { perClient: 3, total: 10, sessionSeconds: 300 },
    })
    const hostile = Array.from({ length: 12 }, () => open('127.0.0.20'))
    const greetings = await Promise.all(hostile.map((session) => session.greeting))
    expect(greetings.filter((line) => line.startsWith('220 ')).length).toBe(3)
    const refused = greetings.filter((line) => line.startsWith('421 '))
    expect(refused.length).toBe(9)
    expect(refused[0]).toStartWith(
      '421 market.test Too many connections from your address (at most 3 at once)',
    )
    const kept = hostile.filter((_, index) => greetings[index]?.startsWith('220 '))
    for (const session of kept) expect(await session.command('NOOP')).toStartWith('250 ')

    const answer = await sendMail(
      listener.port,
      { from: 'ann@buyer.test', to: MAILBOX, subject: 'ping', text: '{}', messageId: '<honest@buyer.test>' },
      '127.0.0.21',
    )
    expect(answer.response).toContain('Order taken')
  })

  test('attack: addresses that already hold connections cannot take the reserve; an address holding none can', async () => {
    listener = await startOrderListener({
      market: await market(),
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
      // A reserve of 1: once 9 are open, only an address holding none gets the 10th.
      connections: { perClient: 4, total: 10, sessionSeconds: 300 },
    })
    const greet = async (address: string, count: number) =>
      Promise.all(Array.from({ length: count }, () => open(address).greeting))
    const codes = (lines: string[]) => lines.map((line) => line.slice(0, 3))
    expect(codes(await greet('127.0.0.30', 4))).toEqual(['220', '220', '220', '220'])
    expect(codes(await greet('127.0.0.31', 4))).toEqual(['220', '220', '220', '220'])
    expect(codes(await greet('127.0.0.32', 1))).toEqual(['220'])
    // Nine are open: 127.0.0.32 holds one, below its cap of 4, and is still refused the reserve.
    const [reserveRefused = ''] = await greet('127.0.0.32', 1)
    expect(reserveRefused).toStartWith('421 ')
    expect(reserveRefused).toContain('kept for senders holding none')

    const honest = open('127.0.0.33')
    expect(await honest.greeting).toStartWith('220 ')
    const [full = ''] = await greet('127.0.0.34', 1)
    expect(full).toStartWith('421 ')
    expect(await orderOver(honest, 'bob@buyer.test', '<reserve@buyer.test>')).toContain('Order taken')
  })

  test('attack: NOOP, RSET and HELO do not keep a session past its lifetime (injected clock)', async () => {
    const clock = manualClock('2030-01-01T00:00:00Z')
    listener = await startOrderListener({
      market: await market(),
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
      connections: { perClient: 3, total: 10, sessionSeconds: 300 },
      clock,
      sweepMs: 5,
    })
    const hostile = open('127.0.0.40')
    expect(await hostile.greeting).toStartWith('220 ')
    for (const line of ['NOOP', 'RSET', 'HELO keep.test']) {
      clock.advance(99_000)
      expect(await hostile.command(line)).toStartWith('250 ')
    }
    clock.advance(3_000)
    await until(
      () => hostile.replies.some((line) => line.startsWith('421 ')),
      'the 421 at the end of the lifetime',
    )
    await hostile.closed
    expect(hostile.replies.at(-1)).toContain('Session time limit (300 s) reached')
    // Its slot is given back (once the server has seen the close): the address gets its three connections again.
    await until(() => admits('127.0.0.40', 3), 'three connections from 127.0.0.40 after the first ended')
  }, 300_000)

  test('behavior: a session whose lifetime ends while its message is being taken gets its answer, then 421', async () => {
    const clock = manualClock('2030-01-01T00:00:00Z')
    let release = () => {}
    let entered = false
    const gate = {
      held: new Promise<void>((resolve) => {
        release = resolve
      }),
      entered: () => {
        entered = true
      },
    }
    listener = await startOrderListener({
      market: await market(gate),
      mailbox: MAILBOX,
      port: 0,
      host: '127.0.0.1',
      mailAuth: { policy: 'off' },
      connections: { perClient: 3, total: 10, sessionSeconds: 300 },
      clock,
      sweepMs: 5,
    })
    const sender = open('127.0.0.50')
    const idle = open('127.0.0.51')
    expect(await sender.greeting).toStartWith('220 ')
    expect(await idle.greeting).toStartWith('220 ')
    const answer = orderOver(sender, 'ann@buyer.test', '<slow@buyer.test>')
    await until(() => entered, 'the store being asked to accept the order')
    clock.advance(300_000)
    // The sweep ends the idle session, and leaves the one whose message is being stored.
    await idle.closed
    expect(sender.replies.some((line) => line.startsWith('421 '))).toBe(false)
    release()
    expect(await answer).toContain('Order taken')
    await sender.closed
    expect(sender.replies.at(-1)).toContain('Session time limit (300 s) reached')
  }, 300_000)
})
