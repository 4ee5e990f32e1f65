import { describe, expect, test } from 'bun:test'
import { defaultConfig } from './Config.ts'
import {
  type InboundOrderMail,
  mailRetryDelayMs,
  orderAcceptedText,
  orderRefusedText,
  outboxMessageId,
  parseOrderBody,
  parseOrderSubject,
  replyTo,
  stripReplyPrefixes,
} from './OrderMail.ts'
import { sampleTask } from './testing/storeSuite.ts'

const config = defaultConfig('https://market.example')

const parserMessage = (text: string): string => {
  try {
    JSON.parse(text)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error(`${text} parses`)
}

const inbound = (overrides: Partial<InboundOrderMail> = {}): InboundOrderMail => ({
  messageId: '<order-1@example.com>',
  from: 'ann@example.com',
  subject: 'Deep Research',
  text: '{}',
  references: [],
  ...overrides,
})

describe('stripReplyPrefixes', () => {
  test('behavior: removes stacked reply and forward prefixes in any case', () => {
    expect(stripReplyPrefixes('Re: Fwd: AW: Deep Research')).toBe('Deep Research')
    expect(stripReplyPrefixes('RE[2]: fw: SV: Antw: WG: ping')).toBe('ping')
  })

  test('behavior: collapses and trims whitespace', () => {
    expect(stripReplyPrefixes('  Deep \t  Research  ')).toBe('Deep Research')
  })

  test('behavior: keeps words that only start like a prefix', () => {
    expect(stripReplyPrefixes('Review: my code')).toBe('Review: my code')
    expect(stripReplyPrefixes('Research')).toBe('Research')
  })
})

describe('parseOrderSubject', () => {
  test('behavior: a plain skill name has no agent', () => {
    expect(parseOrderSubject('Deep Research')).toEqual({
      agent: null,
      skill: 'Deep Research',
      whole: 'Deep Research',
    })
  })

  test('behavior: agent/skill names the agent and the skill', () => {
    expect(parseOrderSubject('scout/deep-research')).toEqual({
      agent: 'scout',
      skill: 'deep-research',
      whole: 'scout/deep-research',
    })
    expect(parseOrderSubject('scout / Deep Research')).toEqual({
      agent: 'scout',
      skill: 'Deep Research',
      whole: 'scout / Deep Research',
    })
  })

  test('behavior: reply and forward prefixes are ignored', () => {
    expect(parseOrderSubject('Re: Fwd: scout/deep-research')).toEqual({
      agent: 'scout',
      skill: 'deep-research',
      whole: 'scout/deep-research',
    })
  })

  test('behavior: a slash after something that is not an agent name stays part of the skill', () => {
    expect(parseOrderSubject('a b/c')).toEqual({ agent: null, skill: 'a b/c', whole: 'a b/c' })
    expect(parseOrderSubject('x/y')).toEqual({ agent: null, skill: 'x/y', whole: 'x/y' })
  })

  test('error: an empty subject names nothing', () => {
    expect(parseOrderSubject('')).toBeNull()
    expect(parseOrderSubject(' \t ')).toBeNull()
    expect(parseOrderSubject('Re: ')).toBeNull()
  })
})

describe('parseOrderBody', () => {
  test('behavior: a JSON object becomes the params', () => {
    expect(parseOrderBody('{"topic": "solar panels", "depth": 2}')).toEqual({
      ok: true,
      params: { topic: 'solar panels', depth: 2 },
    })
    expect(parseOrderBody('{}')).toEqual({ ok: true, params: {} })
  })

  test('behavior: CRLF line endings and non-breaking spaces around the JSON are accepted', () => {
    expect(parseOrderBody('\u00a0{\r\n  "topic":\u00a0"x"\r\n}\u00a0\r\n')).toEqual({
      ok: true,
      params: { topic: 'x' },
    })
  })

  test('behavior: a signature after a "-- " line is ignored', () => {
    expect(parseOrderBody('{"topic": "x"}\n-- \nAnn Example\nCEO, Example Ltd')).toEqual({
      ok: true,
      params: { topic: 'x' },
    })
    expect(parseOrderBody('{"topic": "x"}\r\n-- \r\nAnn')).toEqual({ ok: true, params: { topic: 'x' } })
  })

  test('behavior: quoted reply lines and the attribution line are ignored', () => {
    const text = [
      '{"topic": "x"}',
      '',
      'On Fri, 1 May 2026 at 10:00, orders@market.example wrote:',
      '> Your order was not placed; nothing was created and nothing is owed.',
      '>',
      '> What was wrong: The message body is empty.',
      '',
    ].join('\n')
    expect(parseOrderBody(text)).toEqual({ ok: true, params: { topic: 'x' } })
  })

  test('behavior: the JSON object is found below a quote, under a wrapped attribution, or inside a greeting', () => {
    const bottomPosted = 'On Mon, Ann wrote:\n> old\n\n{"a": 1}'
    const wrapped = '{"a": 1}\n\nOn Mon, 1 May 2026 at 10:00, Ann Example <\nann@example.com> wrote:\n> old'
    const greeting = 'Hello,\nplease run this:\n{"a": 1}\nThanks!'
    for (const text of [bottomPosted, wrapped, greeting]) {
      expect(parseOrderBody(text), text).toEqual({ ok: true, params: { a: 1 } })
    }
    expect(parseOrderBody('Hello {"a": }')).toMatchObject({ ok: false, reason: 'invalid_json' })
    expect(parseOrderBody('[{"a": 1}]')).toMatchObject({ ok: false, reason: 'invalid_json' })
  })

  test('error: no text part is no_text_body', () => {
    expect(parseOrderBody(null)).toMatchObject({ ok: false, reason: 'no_text_body' })
  })

  test('error: a blank body is empty_body', () => {
    for (const text of ['', '  \n\t\r\n', '\u00a0', '> only a quote\n-- \nAnn']) {
      expect(parseOrderBody(text)).toMatchObject({ ok: false, reason: 'empty_body' })
    }
  })

  test('error: invalid JSON is invalid_json, without repeating the parser message (it quotes the body)', () => {
    const body = '{"topic": buy-pills-at-example}'
    expect(parserMessage(body)).not.toBe('')
    expect(parseOrderBody(body)).toEqual({
      ok: false,
      reason: 'invalid_json',
      detail: 'The body is not valid JSON.',
    })
  })

  test('error: curly quotes are pointed out', () => {
    expect(parseOrderBody('{\u201ctopic\u201d: \u201csolar\u201d}')).toMatchObject({
      ok: false,
      reason: 'invalid_json',
      detail: expect.stringContaining('curly quotes'),
    })
  })

  test('error: plain invalid JSON does not mention curly quotes', () => {
    expect(parseOrderBody('topic = solar')).toMatchObject({
      reason: 'invalid_json',
      detail: expect.not.stringContaining('curly quotes'),
    })
  })

  test('error: JSON that is not one object asks for one object', () => {
    for (const text of ['[{"topic": "x"}]', '42', '"hello"', 'null', 'true']) {
      expect(parseOrderBody(text)).toMatchObject({
        ok: false,
        reason: 'invalid_json',
        detail: expect.stringContaining('one JSON object'),
      })
    }
  })
})

describe('mailRetryDelayMs', () => {
  test('behavior: starts at 1 s and doubles with each failure', () => {
    expect([1, 2, 3, 4, 10].map(mailRetryDelayMs)).toEqual([1_000, 2_000, 4_000, 8_000, 512_000])
  })

  test('behavior: is capped at 10 minutes', () => {
    expect(mailRetryDelayMs(11)).toBe(600_000)
    expect(mailRetryDelayMs(1_000)).toBe(600_000)
  })

  test('behavior: no failures yet waits the first delay', () => {
    expect(mailRetryDelayMs(0)).toBe(1_000)
  })
})

describe('outboxMessageId', () => {
  test('behavior: the entry id at the mailbox domain', () => {
    expect(outboxMessageId('mail_abc', 'orders@market.example')).toBe('<mail_abc@market.example>')
    expect(outboxMessageId('mail_abc', 'bot@mail.example@relay.example')).toBe('<mail_abc@relay.example>')
  })

  test('behavior: a mailbox without a domain falls back to localhost', () => {
    expect(outboxMessageId('mail_abc', '')).toBe('<mail_abc@localhost>')
    expect(outboxMessageId('mail_abc', 'orders@')).toBe('<mail_abc@localhost>')
  })
})

describe('replyTo', () => {
  const content = {
    subject: 'scout/deep-research',
    text: 'Your order is in.',
    headers: { 'X-Agentmarket-Task': 'task_1' },
  }

  test('behavior: goes from the mailbox to the sender, threaded under the order', () => {
    const reply = replyTo(
      inbound({ references: ['<root@example.com>'] }),
      'mail_1',
      config.orderMailbox,
      content,
    )
    expect(reply).toEqual({
      from: 'orders@market.example',
      to: 'ann@example.com',
      subject: 'Re: scout/deep-research',
      text: 'Your order is in.',
      messageId: '<mail_1@market.example>',
      inReplyTo: '<order-1@example.com>',
      references: ['<root@example.com>', '<order-1@example.com>'],
      headers: { 'Auto-Submitted': 'auto-replied', 'X-Agentmarket-Task': 'task_1' },
    })
  })

  test('behavior: keeps only the last 10 references, the order itself last', () => {
    const older = Array.from({ length: 12 }, (_, index) => `<ref-${index}@example.com>`)
    const reply = replyTo(inbound({ references: older }), 'mail_1', config.orderMailbox, content)
    expect(reply.references).toEqual([...older.slice(3), '<order-1@example.com>'])
  })

  test("behavior: the subject is the mailbox's own, never the sender's words", () => {
    const subjectOf = (subject: string) =>
      replyTo(inbound({ subject }), 'mail_1', config.orderMailbox, content).subject
    for (const subject of ['Deep Research', 'Re: Deep Research', 'Cheap pills at spam.example', '   '])
      expect(subjectOf(subject)).toBe('Re: scout/deep-research')
  })
})

describe('orderAcceptedText', () => {
  test('behavior: an unpaid task says what to pay and where to verify and poll', () => {
    const task = sampleTask({ agentName: 'scout', priceBaseUnits: 1_500_000n })
    const text = orderAcceptedText(task, config)
    const self = `https://market.example/api/agents/scout/tasks/${task.id}`
    expect(text).toContain(`Task:   ${task.id}`)
    expect(text).toContain('Status: pending_payment')
    expect(text).toContain('Price:  1.5 USDC')
    expect(text).toContain(`Send 1.5 USDC (1500000 base units`)
    expect(text).toContain(`to ${task.payTo}`)
    expect(text).toContain(`POST ${self}/verify-payment`)
    expect(text).toContain(`GET ${self} until status is "completed"`)
  })

  test('behavior: a free task says nothing is owed and asks for no payment', () => {
    const task = sampleTask({
      agentName: 'scout',
      status: 'paid',
      priceBaseUnits: 0n,
      payTo: null,
      payment: {
        method: 'free',
        txHash: null,
        escrowTaskId: null,
        amountBaseUnits: 0n,
        from: null,
        at: new Date(),
      },
    })
    const text = orderAcceptedText(task, config)
    expect(text).toContain(`Task:   ${task.id}`)
    expect(text).toContain('Price:  free')
    expect(text).toContain('scout can start on it now')
    expect(text).toContain(`GET https://market.example/api/agents/scout/tasks/${task.id}`)
    expect(text).not.toContain('verify-payment')
    expect(text).not.toContain('USDC')
    expect(text).not.toContain('Pay')
  })
})

describe('orderRefusedText', () => {
  test('behavior: says what was wrong, how to fix it, and how to order', () => {
    const text = orderRefusedText('The body is empty.', 'Send {}.', config)
    expect(text).toContain('nothing was created and nothing is owed')
    expect(text).toContain('What was wrong: The body is empty.')
    expect(text).toContain('How to fix it: Send {}.')
    expect(text).toContain('To: orders@market.example')
    expect(text).toContain('https://market.example/api/community/agents')
  })
})
