import { describe, expect, test } from 'bun:test'
import type { Message, Part } from '@a2a-js/sdk'
import { testApp } from '../packages/server/src/testing/http.ts'
import { type A2aBinding, sdkClient, sdkMessage, sendForTask } from './support/a2aClient.ts'

// What most A2A clients send first is plain text: an agent answers how to order it (each skill with the data part
// that orders it), the market answers what the text finds and how to order; neither answers "invalid params".

const SKILLS = [
  {
    name: 'Deep Search',
    input: {
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
      additionalProperties: false,
    },
  },
  'Echo',
]

/** A market with seller `finder` (Deep Search with a schema, Echo), and the SDK client of an interface. */
async function market() {
  const app = await testApp()
  await app.register('finder', { skills: SKILLS, bio: 'Finds rare books.' })
  await app.register('baker', { skills: ['Bake'], bio: 'Bakes bread.' })
  const client = (binding: A2aBinding, url: string) => sdkClient(app, binding, url)
  return { app, client }
}

/** A user message of one text part. */
const textMessage = (text: string): Message => {
  const part: Part = {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: '',
  }
  return { ...sdkMessage({}), parts: [part] }
}

/** The message an answer is (throws on a task), its text and its data. */
function replyOf(answer: unknown) {
  expect(answer).toHaveProperty('messageId')
  const { parts } = answer as Message
  const text = parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : [])).join('')
  const data = parts.find((part) => part.content?.$case === 'data')?.content?.value as Record<string, unknown>
  return { text, data }
}

const send = (client: Awaited<ReturnType<Awaited<ReturnType<typeof market>>['client']>>, message: Message) =>
  client.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined })

describe('A2A plain-text messages', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    test(`behavior (${binding}): an agent answers a plain text with its skills, each with the data part that orders it; sending that part orders`, async () => {
      const { client } = await market()
      const agent = await client(binding, 'http://localhost:3000/api/agents/finder/')
      const { text, data } = replyOf(await send(agent, textMessage('hello, what can you do?')))
      expect(text).toContain('"skill"')
      expect(text).toContain('deep-search (free)')
      const skills = data.skills as { skill: string; order: { skill: string; params: unknown } }[]
      expect(skills.map(({ skill }) => skill)).toEqual(['deep-search', 'echo'])
      const deep = skills.find(({ skill }) => skill === 'deep-search')
      expect(deep?.order).toEqual({ skill: 'deep-search', params: { q: '<q>' } })
      // The part it names is an order as it stands.
      const task = await sendForTask(agent, sdkMessage({ ...deep?.order, params: { q: 'first editions' } }))
      expect(task.id).toBeTruthy()
    })

    test(`behavior (${binding}): the market answers a plain text with the agents it finds and how to order from one`, async () => {
      const { client } = await market()
      const marketAgent = await client(binding, 'http://localhost:3000/')
      const { text, data } = replyOf(await send(marketAgent, textMessage('bread')))
      expect(text).toContain('order-skill')
      expect(JSON.stringify(data)).toContain('baker')
      expect(JSON.stringify(data)).not.toContain('finder')
    })
  }

  test('error: a message with neither a data part nor text still says which data part to send', async () => {
    const { client } = await market()
    const agent = await client('JSONRPC', 'http://localhost:3000/api/agents/finder/')
    const empty = { ...sdkMessage({}), parts: [] }
    await expect(send(agent, empty)).rejects.toThrow(/data part/)
  })
})
