import { afterEach, describe, expect, test } from 'bun:test'
import { defaultConfig, Marketplace, memoryStore, type Store } from '@agentmarket/core'
import { sendMail } from '../../../../tests/support/smtp.ts'
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
