import { describe, expect, test } from 'bun:test'
import type { ChainReader, MailMessage } from '@agentmarket/core'
import { sampleAgent, sampleTask } from '@agentmarket/core/testing'
import { MAIL_FAIR_SHARE, RECHECK_FAIR_SHARE } from '../../packages/core/src/FairQueue.ts'
import { startMailDelivery } from '../../packages/server/src/mail/delivery.ts'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { until } from '../support/until.ts'

// Issue 37, mechanism 3: every background queue claims by one fair lease-queue shape (core FairQueue.ts). The
// webhook queue's attack is tests/security/webhookFairness.test.ts; here the other two. A hostile party floods the
// outbox with replies to a domain whose mail hangs, or fills the re-check queue with payments that never confirm,
// before an honest party's one item; passes run on the app's manual clock (libSQL store), and the assertions count
// what each pass claimed, never elapsed time.

describe('outgoing mail: fair shares', () => {
  test('attack: replies to a domain whose mail hangs, queued first and sustained, never hold back another recipient’s reply', async () => {
    // Should happen: the honest reply is claimed in the first pass after it is queued while every send to the
    // hanging domain still hangs, and that domain never has more than its share in flight. Before: the oldest 20
    // due entries were claimed and sent one after another, all the attacker's, so the honest reply waited.
    const app = await testApp()
    const { apiKey } = await app.market.registerAgent({ name: 'mailseller' })
    await app.market.updateAgent('mailseller', apiKey, { skills: [{ name: 'Ping', type: 'free' }] })
    const order = async (from: string) =>
      app.market.receiveOrderMail({
        messageId: `<${crypto.randomUUID()}@sender.example>`,
        from,
        subject: 'Ping',
        text: '{}',
        references: [],
      })
    const started: MailMessage[] = []
    const mailer = {
      send: (mail: MailMessage) => {
        started.push(mail)
        // The hostile domain's mail servers accept and never answer; everyone else's answer at once.
        return mail.to.endsWith('@tarpit.example') ? new Promise<void>(() => {}) : Promise.resolve()
      },
    }
    /** One pass, not awaited (the hostile sends hang); answers the recipients it started sending to. */
    const pass = async (): Promise<string[]> => {
      const before = started.length
      let claimed = -1
      void app.market.deliverMail(mailer, { onClaimed: (count) => (claimed = count) })
      await until(
        () => claimed >= 0 && started.length - before === claimed,
        'the pass starting each send it claimed',
        {
          everyMs: 1,
        },
      )
      return started.slice(before).map((mail) => mail.to)
    }

    for (let index = 0; index < 40; index++) await order(`bot${index}@tarpit.example`)
    const first = await pass()
    expect(first.length).toBeGreaterThan(0)
    app.clock.advance(1_000)
    for (let index = 40; index < 60; index++) await order(`bot${index}@tarpit.example`)
    await order('ann@honest.example')
    app.clock.advance(1_000)
    const second = await pass()
    expect(second, 'the honest reply was claimed in the first pass after it was queued').toContain(
      'ann@honest.example',
    )
    for (let round = 0; round < 3; round++) {
      app.clock.advance(1_000)
      await pass()
    }
    const hostile = started.filter((mail) => mail.to.endsWith('@tarpit.example')).length
    expect(hostile, 'the hanging domain holds its share of sends, no more').toBeLessThanOrEqual(
      MAIL_FAIR_SHARE.perEndpoint,
    )
  })
})

describe('outgoing mail: the server loop', () => {
  test('attack: a pass whose sends hang does not hold the loop: a reply queued after it goes out while they hang', async () => {
    // Should happen: the server's loop starts the next pass while an earlier one waits on hanging sends. Before, the
    // loop ran one pass at a time, so one hanging domain held every later reply until the relay timed out. The
    // hanging sends never end here: the old loop would never send the honest reply, however fast the machine.
    const app = await testApp()
    const { apiKey } = await app.market.registerAgent({ name: 'loopseller' })
    await app.market.updateAgent('loopseller', apiKey, { skills: [{ name: 'Ping', type: 'free' }] })
    const order = (from: string) =>
      app.market.receiveOrderMail({
        messageId: `<${crypto.randomUUID()}@sender.example>`,
        from,
        subject: 'Ping',
        text: '{}',
        references: [],
      })
    const started: string[] = []
    const mailer = {
      send: (mail: MailMessage) => {
        started.push(mail.to)
        return mail.to.endsWith('@tarpit.example') ? new Promise<void>(() => {}) : Promise.resolve()
      },
    }
    for (let index = 0; index < 8; index++) await order(`bot${index}@tarpit.example`)
    const loop = startMailDelivery(app.market, mailer, { intervalMs: 5 })
    await until(() => started.length > 0, 'a first send started', { everyMs: 1 })
    await order('ann@honest.example')
    app.clock.advance(1_000)
    await until(() => started.includes('ann@honest.example'), "the honest reply's send started", {
      everyMs: 1,
    })
    expect(started.filter((to) => to.endsWith('@tarpit.example')).length).toBeLessThanOrEqual(
      MAIL_FAIR_SHARE.perEndpoint,
    )
    await loop.stop(10)
  })
})

describe('payment re-checks: fair shares', () => {
  test('attack: a seller with a hundred never-confirming payments from ten clients, due first, never holds back another seller’s re-check', async () => {
    // Should happen: the honest seller's payment is read in the first pass it is due, and the hostile seller gets
    // at most its share of the pass. Before: the 100 soonest due checks were claimed, all the attacker's.
    const asked: string[] = []
    const chain: ChainReader = {
      headBlock: async () => 100n,
      receipts: async (hashes) => {
        asked.push(...hashes)
        return hashes.map(() => null)
      },
    }
    const app = await testApp('2026-06-01T12:00:00.000Z', { chain })
    await app.store.insertAgent(sampleAgent({ name: 'hostile' }), [])
    await app.store.insertAgent(sampleAgent({ name: 'honest' }), [])
    const check = (label: string, dueMs: number) => ({
      txHash: `0x${label.padStart(64, '0')}` as const,
      signature: null,
      attempts: 0,
      nextAt: new Date(app.clock.now().getTime() + dueMs),
    })
    for (let index = 0; index < 100; index++)
      await app.store.insertTask(
        sampleTask({
          agentName: 'hostile',
          clientKey: `client-${index % 10}`,
          pendingCheck: check(`a${index}`, -60_000 + index),
        }),
        [],
      )
    const honest = check('b0', 0)
    await app.store.insertTask(
      sampleTask({ agentName: 'honest', clientKey: 'client-ann', pendingCheck: honest }),
      [],
    )
    app.clock.advance(1)
    const report = await app.market.recheckPendingPayments()
    expect(asked, 'the honest payment was read in the first pass it was due').toContain(honest.txHash)
    const hostile = asked.filter((hash) => hash !== honest.txHash).length
    expect(hostile).toBeLessThanOrEqual(RECHECK_FAIR_SHARE.perTenant)
    expect(report.checked).toBe(hostile + 1)
  })
})
