import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { Marketplace } from '../Marketplace.ts'
import {
  type InboundOrderMail,
  MAIL_GIVE_UP_MS,
  type MailMessage,
  mailRetryDelayMs,
  type OrderMailRefusal,
} from '../OrderMail.ts'
import { manualClock } from '../ports/Clock.ts'
import type { Mailer } from '../ports/Mailer.ts'
import type { TaskListQuery } from '../ports/Store.ts'
import { TASK_STATUSES } from '../Task.ts'
import type { OrderMailResult } from './mail/index.ts'

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const DEEP_RESEARCH = { name: 'Deep Research', type: 'purchasable', price: 1.5, sla: '24h' }

const taskQuery: TaskListQuery = {
  statuses: [...TASK_STATUSES],
  order: 'work_queue',
  limit: 100,
  offset: 0,
}

function setup() {
  const store = memoryStore()
  const clock = manualClock('2026-05-01T00:00:00Z')
  const market = Marketplace.create({ store, config: defaultConfig('https://market.example'), clock })
  const seller = async (name: string, skills: unknown[], walletAddress: string | null = WALLET) => {
    const { apiKey } = await market.registerAgent({ name })
    await market.updateAgent(name, apiKey, { skills, walletAddress })
    return apiKey
  }
  const tasksOf = async (name: string) => (await store.listTasks(name, taskQuery)).tasks
  const createdEvents = async () =>
    (await store.listEvents({ limit: 100 })).filter((event) => event.kind === 'task.created')
  return { store, clock, market, seller, tasksOf, createdEvents }
}

const order = (overrides: Partial<InboundOrderMail> = {}): InboundOrderMail => ({
  messageId: `<${crypto.randomUUID()}@example.com>`,
  from: 'ann@example.com',
  subject: 'Deep Research',
  text: '{"topic": "solar panels"}',
  references: [],
  ...overrides,
})

function recordingMailer(): Mailer & { sent: MailMessage[] } {
  const sent: MailMessage[] = []
  return {
    sent,
    async send(mail) {
      sent.push(mail)
    },
  }
}

function failingMailer(message = 'relay refused: 451 try later'): Mailer & { tries: number } {
  const mailer = {
    tries: 0,
    async send() {
      mailer.tries += 1
      throw new Error(message)
    },
  }
  return mailer
}

function taskResult(result: OrderMailResult) {
  if (result.outcome !== 'task') throw new Error(`expected a task, got ${JSON.stringify(result)}`)
  return result
}

function refusal(result: OrderMailResult) {
  if (result.outcome !== 'refused') throw new Error(`expected a refusal, got ${JSON.stringify(result)}`)
  return result
}

describe('receiveOrderMail', () => {
  test('behavior: a paid skill ordered by name makes a task awaiting the sender’s payment', async () => {
    const { store, market, seller } = setup()
    const apiKey = await seller('scout', [DEEP_RESEARCH])
    const result = taskResult(await market.receiveOrderMail(order()))
    expect(result.agent).toBe('scout')
    const task = await store.getTask('scout', result.taskId)
    expect(task).toMatchObject({
      agentName: 'scout',
      skillName: 'Deep Research',
      skillSlug: 'deep-research',
      sla: '24h',
      status: 'pending_payment',
      priceBaseUnits: 1_500_000n,
      payTo: WALLET,
      params: { topic: 'solar panels' },
      buyerEmail: 'ann@example.com',
      payment: null,
    })
    const queue = await market.listTasks('scout', apiKey, {})
    expect(queue.tasks).toEqual([
      expect.objectContaining({ task_id: result.taskId, buyer_email: 'ann@example.com' }),
    ])
  })

  test('behavior: the reply to the sender carries the task id, payment links and threading', async () => {
    const { clock, market, seller } = setup()
    await seller('scout', [DEEP_RESEARCH])
    const mail = order({ references: ['<root@example.com>'] })
    const result = taskResult(await market.receiveOrderMail(mail))
    const reply = await market.getMail(result.replyId)
    const self = `https://market.example/api/agents/scout/tasks/${result.taskId}`
    expect(reply).toMatchObject({
      id: result.replyId,
      createdAt: clock.now(),
      nextAttemptAt: clock.now(),
      attempts: 0,
      sentAt: null,
      failedAt: null,
      lastError: null,
      mail: {
        from: 'orders@market.example',
        to: 'ann@example.com',
        subject: 'Re: scout/deep-research',
        messageId: `<${result.replyId}@market.example>`,
        inReplyTo: mail.messageId,
        references: ['<root@example.com>', mail.messageId],
        headers: {
          'Auto-Submitted': 'auto-replied',
          'X-Agentmarket-Task': result.taskId,
          'X-Agentmarket-Task-Url': self,
        },
      },
    })
    expect(reply?.mail.text).toContain(result.taskId)
    expect(reply?.mail.text).toContain(`${self}/verify-payment`)
    expect(reply?.mail.text).toContain('Send 1.5 USDC')
    expect(reply?.mail.headers).not.toHaveProperty('X-Agentmarket-Problem')
  })

  test('behavior: the new task is announced in the feed', async () => {
    const { market, seller, createdEvents } = setup()
    await seller('scout', [DEEP_RESEARCH])
    await market.receiveOrderMail(order())
    const events = await createdEvents()
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      agent: 'scout',
      data: { task: { skill: 'Deep Research', amount: 1.5, status: 'pending_payment' } },
    })
  })

  test('behavior: the skill may be named by slug or by name in any case', async () => {
    const { store, market, seller } = setup()
    await seller('scout', [DEEP_RESEARCH])
    for (const subject of ['deep-research', 'DEEP RESEARCH', 'Re: deep research']) {
      const result = taskResult(await market.receiveOrderMail(order({ subject })))
      expect((await store.getTask('scout', result.taskId))?.skillSlug).toBe('deep-research')
    }
  })

  test('behavior: a free skill makes a task that is paid at once', async () => {
    const { store, market, seller } = setup()
    await seller('pinger', ['Ping'], null)
    const result = taskResult(await market.receiveOrderMail(order({ subject: 'Ping', text: '{}' })))
    const task = await store.getTask('pinger', result.taskId)
    expect(task).toMatchObject({ status: 'paid', priceBaseUnits: 0n, payTo: null, params: {} })
    expect(task?.payment?.method).toBe('free')
    const reply = await market.getMail(result.replyId)
    expect(reply?.mail.text).toContain('Price:  free')
    expect(reply?.mail.text).not.toContain('verify-payment')
  })

  test('behavior: the same message delivered again changes nothing', async () => {
    const { market, seller, tasksOf } = setup()
    await seller('scout', [DEEP_RESEARCH])
    const mail = order()
    const first = await market.receiveOrderMail(mail)
    expect(first.outcome).toBe('task')
    expect(await market.receiveOrderMail(mail)).toEqual({ outcome: 'duplicate' })
    expect(await market.receiveOrderMail({ ...mail, from: 'ANN@Example.com' })).toEqual({
      outcome: 'duplicate',
    })
    expect(await tasksOf('scout')).toHaveLength(1)
    const mailer = recordingMailer()
    expect(await market.deliverMail(mailer)).toEqual({ sent: 1, retrying: 0, failed: 0 })
  })

  test('behavior: a refused message delivered again is not answered twice', async () => {
    const { market } = setup()
    const mail = order({ subject: 'No Such Skill' })
    expect((await market.receiveOrderMail(mail)).outcome).toBe('refused')
    expect(await market.receiveOrderMail(mail)).toEqual({ outcome: 'duplicate' })
    expect(await market.deliverMail(recordingMailer())).toEqual({ sent: 1, retrying: 0, failed: 0 })
  })

  test('behavior: the same Message-ID from another sender is another order', async () => {
    const { store, market, seller, tasksOf } = setup()
    await seller('scout', [DEEP_RESEARCH])
    const mail = order()
    const first = taskResult(await market.receiveOrderMail(mail))
    const second = taskResult(await market.receiveOrderMail({ ...mail, from: 'bob@example.com' }))
    expect(second.taskId).not.toBe(first.taskId)
    expect(await tasksOf('scout')).toHaveLength(2)
    expect((await store.getTask('scout', second.taskId))?.buyerEmail).toBe('bob@example.com')
  })

  test('behavior: agent/skill picks one of the agents selling the skill', async () => {
    const { store, market, seller, tasksOf } = setup()
    await seller('alpha', [DEEP_RESEARCH])
    await seller('beta', [DEEP_RESEARCH])
    const result = taskResult(await market.receiveOrderMail(order({ subject: 'Re: beta/deep-research' })))
    expect(result.agent).toBe('beta')
    expect((await store.getTask('beta', result.taskId))?.skillName).toBe('Deep Research')
    expect(await tasksOf('alpha')).toEqual([])
  })

  describe('refusals', () => {
    const refusedWith = async (
      market: ReturnType<typeof setup>['market'],
      mail: InboundOrderMail,
      reason: OrderMailRefusal,
    ) => {
      const result = refusal(await market.receiveOrderMail(mail))
      expect(result.reason).toBe(reason)
      const reply = await market.getMail(result.replyId)
      expect(reply?.mail).toMatchObject({
        from: 'orders@market.example',
        to: mail.from,
        inReplyTo: mail.messageId,
        headers: { 'Auto-Submitted': 'auto-replied', 'X-Agentmarket-Problem': reason },
      })
      expect(reply?.mail.headers).not.toHaveProperty('X-Agentmarket-Task')
      expect(reply?.mail.text).toContain('nothing was created and nothing is owed')
      return reply?.mail.text ?? ''
    }

    test('error: an unknown skill makes no task for any agent', async () => {
      const { market, seller, tasksOf, createdEvents } = setup()
      await seller('scout', [DEEP_RESEARCH])
      await seller('pinger', ['Ping'])
      const text = await refusedWith(market, order({ subject: 'Shallow Research' }), 'unknown_skill')
      expect(text).toContain('No agent sells a skill with the name in your subject')
      expect(text).not.toContain('Shallow Research')
      expect(await tasksOf('scout')).toEqual([])
      expect(await tasksOf('pinger')).toEqual([])
      expect(await createdEvents()).toEqual([])
    })

    test('error: agent/skill naming a skill the agent does not sell is unknown', async () => {
      const { market, seller, tasksOf } = setup()
      await seller('scout', [DEEP_RESEARCH])
      await seller('pinger', ['Ping'])
      const text = await refusedWith(market, order({ subject: 'pinger/deep-research' }), 'unknown_skill')
      expect(text).toContain('no agent of the "agent/skill" it names sells such a skill')
      expect(await tasksOf('scout')).toEqual([])
    })

    test('error: an empty subject names no skill', async () => {
      const { market, seller } = setup()
      await seller('scout', [DEEP_RESEARCH])
      const mail = order({ subject: '  ' })
      await refusedWith(market, mail, 'missing_subject')
      const result = refusal(await market.receiveOrderMail({ ...mail, messageId: '<again@example.com>' }))
      expect((await market.getMail(result.replyId))?.mail.subject).toBe('Re: your order (not placed)')
    })

    test('error: a skill sold by two agents is ambiguous and the reply lists both', async () => {
      const { market, seller, tasksOf } = setup()
      await seller('alpha', [DEEP_RESEARCH])
      await seller('beta', [DEEP_RESEARCH])
      const text = await refusedWith(market, order(), 'ambiguous_skill')
      expect(text).toContain('2 agents sell a skill with the name in your subject')
      expect(text).toContain('  alpha/deep-research')
      expect(text).toContain('  beta/deep-research')
      expect(await tasksOf('alpha')).toEqual([])
      expect(await tasksOf('beta')).toEqual([])
    })

    test('error: a body that is not JSON is invalid_json', async () => {
      const { market, seller } = setup()
      await seller('scout', [DEEP_RESEARCH])
      const text = await refusedWith(market, order({ text: 'topic: solar panels' }), 'invalid_json')
      expect(text).toContain('The body is not valid JSON')
    })

    test("error: params that break the skill's input schema are invalid_params, the reply pointing at the field", async () => {
      const { market, seller, tasksOf } = setup()
      const input = {
        type: 'object',
        properties: { topic: { type: 'string', minLength: 3 } },
        required: ['topic'],
      }
      await seller('scout', [{ ...DEEP_RESEARCH, input }])
      const text = await refusedWith(market, order({ text: '{"topic": "ai"}' }), 'invalid_params')
      expect(text).toContain('/params/topic')
      expect(text).toContain('must have at least 3 characters')
      expect(await tasksOf('scout')).toHaveLength(0)
    })

    test('error: an empty body is empty_body', async () => {
      const { market, seller } = setup()
      await seller('scout', [DEEP_RESEARCH])
      await refusedWith(market, order({ text: ' \r\n ' }), 'empty_body')
    })

    test('error: a message without a text part is no_text_body', async () => {
      const { market, seller } = setup()
      await seller('scout', [DEEP_RESEARCH])
      await refusedWith(market, order({ text: null }), 'no_text_body')
    })

    test('error: params over 16 KiB are invalid_params', async () => {
      const { market, seller, tasksOf } = setup()
      await seller('scout', [DEEP_RESEARCH])
      const text = JSON.stringify({ topic: 'x'.repeat(16 * 1024) })
      const reply = await refusedWith(market, order({ text }), 'invalid_params')
      expect(reply).toContain('/params: must be at most 16384 bytes of JSON')
      expect(await tasksOf('scout')).toEqual([])
    })

    test('error: a paid skill of a seller without a wallet cannot be ordered', async () => {
      const { market, seller, tasksOf } = setup()
      await seller('scout', [DEEP_RESEARCH], null)
      const text = await refusedWith(market, order(), 'seller_has_no_wallet')
      expect(text).toContain('"scout" has set no walletAddress')
      expect(await tasksOf('scout')).toEqual([])
    })
  })
})

describe('deliverMail', () => {
  const orderedOnce = async () => {
    const context = setup()
    await context.seller('scout', [DEEP_RESEARCH])
    const result = taskResult(await context.market.receiveOrderMail(order()))
    return { ...context, replyId: result.replyId }
  }

  test('behavior: a due reply is sent once and marked sent', async () => {
    const { clock, market, replyId } = await orderedOnce()
    const mailer = recordingMailer()
    expect(await market.deliverMail(mailer)).toEqual({ sent: 1, retrying: 0, failed: 0 })
    const entry = await market.getMail(replyId)
    expect(mailer.sent).toEqual([entry?.mail as MailMessage])
    expect(entry).toMatchObject({ attempts: 1, sentAt: clock.now(), failedAt: null, lastError: null })
    clock.advance(60 * 60 * 1000)
    expect(await market.deliverMail(mailer)).toEqual({ sent: 0, retrying: 0, failed: 0 })
    expect(mailer.sent).toHaveLength(1)
  })

  test('error: a failed send is retried after the back-off delay', async () => {
    const { clock, market, replyId } = await orderedOnce()
    const failing = failingMailer()
    expect(await market.deliverMail(failing)).toEqual({ sent: 0, retrying: 1, failed: 0 })
    const delay = mailRetryDelayMs(1)
    expect(await market.getMail(replyId)).toMatchObject({
      attempts: 1,
      sentAt: null,
      failedAt: null,
      lastError: 'relay refused: 451 try later',
      nextAttemptAt: new Date(clock.now().getTime() + delay),
    })

    const mailer = recordingMailer()
    expect(await market.deliverMail(mailer)).toEqual({ sent: 0, retrying: 0, failed: 0 })
    clock.advance(delay - 1)
    expect(await market.deliverMail(mailer)).toEqual({ sent: 0, retrying: 0, failed: 0 })
    clock.advance(1)
    expect(await market.deliverMail(mailer)).toEqual({ sent: 1, retrying: 0, failed: 0 })
    expect(mailer.sent).toHaveLength(1)
    expect(failing.tries).toBe(1)
    expect(await market.getMail(replyId)).toMatchObject({ attempts: 2, sentAt: clock.now() })
  })

  test('error: a send still failing three days after the reply was written is given up', async () => {
    const { clock, market, replyId } = await orderedOnce()
    const failing = failingMailer()
    clock.advance(MAIL_GIVE_UP_MS - 1)
    expect(await market.deliverMail(failing)).toEqual({ sent: 0, retrying: 1, failed: 0 })
    clock.advance(mailRetryDelayMs(1))
    expect(await market.deliverMail(failing)).toEqual({ sent: 0, retrying: 0, failed: 1 })
    expect(await market.getMail(replyId)).toMatchObject({
      attempts: 2,
      sentAt: null,
      failedAt: clock.now(),
      lastError: 'relay refused: 451 try later',
    })

    const mailer = recordingMailer()
    clock.advance(24 * 60 * 60 * 1000)
    expect(await market.deliverMail(mailer)).toEqual({ sent: 0, retrying: 0, failed: 0 })
    expect(mailer.sent).toEqual([])
  })

  test('error: a long error is kept to its first 500 characters', async () => {
    const { market, replyId } = await orderedOnce()
    await market.deliverMail(failingMailer('e'.repeat(2_000)))
    expect((await market.getMail(replyId))?.lastError).toBe('e'.repeat(500))
  })

  test('behavior: limit caps the replies sent in one pass', async () => {
    const { market, seller } = setup()
    await seller('scout', [DEEP_RESEARCH])
    for (let index = 0; index < 3; index += 1) await market.receiveOrderMail(order())
    const mailer = recordingMailer()
    expect(await market.deliverMail(mailer, { limit: 2 })).toEqual({ sent: 2, retrying: 0, failed: 0 })
    expect(await market.deliverMail(mailer, { limit: 2 })).toEqual({ sent: 1, retrying: 0, failed: 0 })
    expect(new Set(mailer.sent.map((mail) => mail.messageId)).size).toBe(3)
  })
})

describe('getMail', () => {
  test('error: an unknown id is null', async () => {
    const { market } = setup()
    expect(await market.getMail('mail_unknown')).toBeNull()
  })
})
