import { strictEqual as equal, ok, deepStrictEqual as same } from 'node:assert/strict'
import type { FeedEventInput } from '../Feed.ts'
import type { OutboxEntry } from '../OrderMail.ts'
import type { Store } from '../ports/Store.ts'
import { sampleAgent, sampleSkill, sampleTask, WIDE } from './fixtures.ts'

const T0 = new Date('2026-01-01T00:00:00.000Z')
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000)

/** An outbox entry due at `due` seconds after T0, written at `written` seconds. */
export function sampleEntry(id: string, due = 0, written = due): OutboxEntry {
  return {
    id,
    mail: {
      from: 'orders@market.example',
      to: 'ann@example.com',
      subject: 'Re: ping',
      text: `reply ${id}\nline two, ünïcode`,
      messageId: `<${id}@market.example>`,
      inReplyTo: '<order-1@example.com>',
      references: ['<older@example.com>', '<order-1@example.com>'],
      headers: { 'Auto-Submitted': 'auto-replied', 'X-Agentmarket-Task': 'task_1' },
    },
    createdAt: at(written),
    attempts: 0,
    nextAttemptAt: at(due),
    leasedUntil: null,
    sentAt: null,
    failedAt: null,
    lastError: null,
  }
}

const createdEvent = (agent: string): FeedEventInput => ({
  kind: 'task.created',
  at: T0,
  agent,
  summary: `${agent} received an order`,
  data: { task: { skill: 'Ping' } },
})

/** The Store cases of orders by e-mail and the outbox; run by `storeSuite`. */
export function mailStoreCases(
  test: (name: string, body: () => Promise<void>) => void,
  withStore: (body: (store: Store) => Promise<void>) => () => Promise<void>,
): void {
  test(
    'behavior: skill sellers are found by slug or by name in any case, most recently active first',
    withStore(async (store) => {
      const translate = sampleSkill({ name: 'Übersetzen Pro', slug: 'translate' })
      await store.insertAgent(sampleAgent({ name: 'Older', skills: [translate], lastActiveAt: at(1) }), [])
      await store.insertAgent(sampleAgent({ name: 'newer', skills: [translate], lastActiveAt: at(9) }), [])
      await store.insertAgent(sampleAgent({ name: 'other', skills: [sampleSkill()] }), [])
      const names = async (wanted: string, limit = 10) =>
        (await store.findSkillSellers(wanted, limit)).map((agent) => agent.name)
      same(await names('translate'), ['newer', 'Older'])
      same(await names('übersetzen pro'), ['newer', 'Older'])
      same(await names('ÜBERSETZEN PRO'), ['newer', 'Older'])
      same(await names('  Translate '), ['newer', 'Older'])
      same(await names('translate', 1), ['newer'])
      same(await names('Ping'), ['other'])
      same(await names('übersetzen'), [])
      same((await store.findSkillSellers('ping', 5))[0]?.skills, [sampleSkill()])
      await store.updateAgent('newer', { skills: [sampleSkill()] }, at(20), [])
      same(await names('translate'), ['Older'])
      same(await names('ping'), ['newer', 'other'])
    }),
  )

  test(
    'behavior: an order mail lands with its task, events and reply at once, and a second delivery changes nothing',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = sampleTask({ buyerEmail: 'ann@example.com', params: { q: 'x' } })
      const reply = sampleEntry('mail_1')
      const receipt = { key: 'k1', receivedAt: T0, task, events: [createdEvent('sample-agent')], reply }
      equal(await store.acceptOrderMail(receipt), 'accepted')
      same(await store.getTask('sample-agent', task.id), task)
      same(await store.getMail('mail_1'), reply)
      equal((await store.listEvents({ limit: 10 })).length, 1)

      const again = sampleTask({ buyerEmail: 'ann@example.com' })
      const second = { ...receipt, task: again, reply: sampleEntry('mail_2') }
      equal(await store.acceptOrderMail(second), 'duplicate')
      equal(await store.getTask('sample-agent', again.id), null)
      equal(await store.getMail('mail_2'), null)
      equal((await store.listEvents({ limit: 10 })).length, 1)

      const refused = { key: 'k2', receivedAt: T0, task: null, events: [], reply: sampleEntry('mail_3') }
      equal(await store.acceptOrderMail(refused), 'accepted')
      equal(await store.acceptOrderMail({ ...refused, reply: sampleEntry('mail_4') }), 'duplicate')
      ok(await store.getMail('mail_3'))
      equal(await store.getMail('mail_4'), null)
      equal(await store.getMail('mail_unknown'), null)

      // An order past its buyer's budget day lands nothing, its key neither: the refusal is recorded under it after.
      const capped = sampleTask({
        buyer: 'bot',
        buyerKey: 'bot',
        createdAt: T0,
        expiresAt: new Date(T0.getTime() + 3_600_000),
      })
      const cap = {
        buyerKey: 'bot',
        limitBaseUnits: 5_000n,
        from: T0,
        to: new Date(T0.getTime() + 86_400_000),
        now: T0,
      }
      const over = { key: 'k3', receivedAt: T0, task: capped, events: [], reply: sampleEntry('mail_5'), cap }
      equal(await store.acceptOrderMail(over), 'budget_exceeded')
      equal(await store.getTask('sample-agent', capped.id), null)
      equal(await store.getMail('mail_5'), null)
      const within = { ...over, cap: { ...cap, limitBaseUnits: 10_000n } }
      equal(await store.acceptOrderMail(within), 'accepted')
      ok(await store.getTask('sample-agent', capped.id))
    }),
  )

  test(
    'behavior: due outbox entries are claimed once per lease, counted, and settled as sent, retried or abandoned',
    withStore(async (store) => {
      const accept = (entry: OutboxEntry) =>
        store.acceptOrderMail({ key: entry.id, receivedAt: T0, task: null, events: [], reply: entry })
      for (const entry of [sampleEntry('mail_c', 30), sampleEntry('mail_a', 0), sampleEntry('mail_b', 10)])
        await accept(entry)
      const ids = (entries: OutboxEntry[]) => entries.map((entry) => entry.id)

      same(ids(await store.claimDueMail(at(5), at(100), { ...WIDE, limit: 10 })), ['mail_a'])
      same(
        ids(await store.claimDueMail(at(5), at(100), { ...WIDE, limit: 10 })),
        [],
        'a leased entry is not claimed again',
      )
      const [first] = await store.claimDueMail(at(40), at(140), { ...WIDE, limit: 1 })
      equal(first?.id, 'mail_b', 'the soonest due comes first')
      equal(first?.attempts, 1)
      same(first?.nextAttemptAt, at(140))
      same(ids(await store.claimDueMail(at(40), at(140), { ...WIDE, limit: 10 })), ['mail_c'])

      await store.settleMail('mail_a', { outcome: 'sent', at: at(6) })
      await store.settleMail('mail_b', {
        outcome: 'retry',
        at: at(41),
        error: 'connect ECONNREFUSED',
        nextAttemptAt: at(42),
      })
      await store.settleMail('mail_c', { outcome: 'failed', at: at(43), error: 'gave up' })
      const sent = await store.getMail('mail_a')
      same(sent?.sentAt, at(6))
      equal(sent?.attempts, 1)
      const retried = await store.getMail('mail_b')
      same(
        [retried?.nextAttemptAt, retried?.lastError, retried?.sentAt],
        [at(42), 'connect ECONNREFUSED', null],
      )
      const abandoned = await store.getMail('mail_c')
      same([abandoned?.failedAt, abandoned?.lastError], [at(43), 'gave up'])

      same(
        ids(await store.claimDueMail(at(41), at(200), { ...WIDE, limit: 10 })),
        [],
        'a retry waits for its time',
      )
      const [again] = await store.claimDueMail(at(500), at(600), { ...WIDE, limit: 10 })
      same([again?.id, again?.attempts], ['mail_b', 2], 'sent and abandoned entries are never claimed')
      await store.settleMail('mail_a', { outcome: 'failed', at: at(7), error: 'late' })
      equal((await store.getMail('mail_a'))?.failedAt, null, 'a sent entry stays sent')
    }),
  )

  test(
    'behavior: racing senders split the due entries between them and never share one',
    withStore(async (store) => {
      for (let n = 0; n < 12; n++) {
        const entry = sampleEntry(`mail_${String(n).padStart(2, '0')}`, n)
        await store.acceptOrderMail({ key: entry.id, receivedAt: T0, task: null, events: [], reply: entry })
      }
      const claims = await Promise.all(
        Array.from({ length: 6 }, () => store.claimDueMail(at(60), at(600), { ...WIDE, limit: 3 })),
      )
      const claimed = claims.flat().map((entry) => entry.id)
      equal(claimed.length, 12)
      equal(new Set(claimed).size, 12)
      ok(claims.every((batch) => batch.length <= 3))
    }),
  )
}
