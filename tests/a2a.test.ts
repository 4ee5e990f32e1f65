import { describe, expect, test } from 'bun:test'
import { type Message, type Task, TaskState, taskStateToJSON } from '@a2a-js/sdk'
import type { PaymentRequired } from '@x402/core/types'
import { testApp } from '../packages/server/src/testing/http.ts'
import { type A2aBinding, sdkClient, sdkMessage, sendForTask } from './support/a2aClient.ts'
import { x402AppOptions, x402ChainForSuite, x402Payer } from './support/x402.ts'

const PRICE = 500_000n
const SKILLS = [{ name: 'Deep Search', type: 'purchasable', price: '0.5' }, 'Echo']
const X402_STATUS = 'x402.payment.status'

const x402 = x402ChainForSuite()

/** A market on anvil taking x402, with a seller of a paid and a free skill; `client(binding)` is the A2A SDK's. */
async function market() {
  const app = await testApp('2026-06-01T12:00:00.000Z', x402AppOptions(x402))
  const { key } = await app.register('seller', { skills: SKILLS, bio: 'Finds things.' })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: x402.seller.address } })
  /** The official A2A client for the card at `url` (an agent's API URL, or the marketplace's origin). */
  // The URL a client is given ends with a slash, so the well-known path resolves under it.
  const client = (binding: A2aBinding, url = 'http://localhost:3000/api/agents/seller/') =>
    sdkClient(app, binding, url)
  const complete = (id: string, resultUrl: string) =>
    app.call('POST', `/api/agents/seller/tasks/${id}/complete`, { key, body: { result_url: resultUrl } })
  return { ...app, key, client, complete }
}

const stateOf = (task: Task) => (task.status ? taskStateToJSON(task.status.state) : '')

describe('A2A for real: the SDK client orders, pays and reads through each agent', () => {
  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
    test(`behavior (${binding}): discover, order the paid skill, pay by x402 inside A2A, poll, read the artifact`, async () => {
      const app = await market()
      const client = await app.client(binding)
      expect(client.transport.protocolName).toBe(binding)
      const ordered = await sendForTask(client, sdkMessage({ skill: 'deep-search', params: { q: 'rust' } }))
      expect(stateOf(ordered)).toBe('TASK_STATE_INPUT_REQUIRED')
      const asked = ordered.status?.message?.metadata ?? {}
      expect(asked[X402_STATUS]).toBe('payment-required')
      const required = asked['x402.payment.required'] as PaymentRequired
      expect(required.accepts[0]).toMatchObject({ amount: PRICE.toString(), payTo: x402.seller.address })
      // The payment instructions are also a data part, for clients without the x402 extension.
      const instructions = ordered.status?.message?.parts.find((part) => part.content?.$case === 'data')
      expect(JSON.stringify(instructions?.content?.value)).toContain('payer_proof')

      const sellerBefore = await x402.anvil.usdcOf(x402.seller.address)
      const payload = await x402Payer(x402.buyer).createPaymentPayload(required)
      const paid = await sendForTask(
        client,
        sdkMessage(
          {},
          {
            taskId: ordered.id,
            contextId: ordered.contextId,
            metadata: { [X402_STATUS]: 'payment-submitted', 'x402.payment.payload': payload },
          },
        ),
      )
      expect(stateOf(paid)).toBe('TASK_STATE_WORKING')
      expect(paid.status?.message?.metadata?.[X402_STATUS]).toBe('payment-completed')
      const receipts = (paid.status?.message?.metadata?.['x402.payment.receipts'] ?? []) as {
        success: boolean
      }[]
      const [receipt] = receipts
      expect(receipt?.success).toBe(true)
      expect(await x402.anvil.usdcOf(x402.seller.address)).toBe(sellerBefore + PRICE)

      expect((await app.complete(ordered.id, 'https://results.example/rust.json')).status).toBe(200)
      const done = await client.getTask({ tenant: '', id: ordered.id, historyLength: undefined })
      expect(stateOf(done)).toBe('TASK_STATE_COMPLETED')
      const artifact = done.artifacts[0]
      expect(artifact?.parts.map((part) => part.content)).toContainEqual({
        $case: 'url',
        value: 'https://results.example/rust.json',
      })
      // The marketplace's own view is there too, the same as GET …/tasks/{id}.
      const view = (await app.call('GET', `/api/agents/seller/tasks/${ordered.id}`)).json
      expect(done.metadata?.agentmarket).toEqual(view)
    })
  }

  test('behavior: a free skill is working at once; ListTasks lists the conversation by its contextId, only it', async () => {
    const app = await market()
    const client = await app.client('JSONRPC')
    const free = await sendForTask(client, sdkMessage({ skill: 'echo', params: { x: 1 } }))
    expect(stateOf(free)).toBe('TASK_STATE_WORKING')
    const second = await sendForTask(
      client,
      sdkMessage({ skill: 'deep-search' }, { contextId: free.contextId }),
    )
    expect(second.contextId).toBe(free.contextId)
    const other = await sendForTask(client, sdkMessage({ skill: 'echo' }))
    expect(other.contextId).not.toBe(free.contextId)
    const listed = await client.listTasks({
      tenant: '',
      contextId: free.contextId,
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 10,
      pageToken: '',
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: false,
    })
    expect(listed.tasks.map((task) => task.id).sort()).toEqual([free.id, second.id].sort())
    // A contextId the client made up starts a new conversation: it cannot join (or list) someone else's.
    const madeUp = await sendForTask(client, sdkMessage({ skill: 'echo' }, { contextId: 'my-context' }))
    expect(madeUp.contextId).not.toBe('my-context')
  })

  test('attack: an x402 payload paid once does not pay a second task; a task of another agent is not found', async () => {
    const app = await market()
    await app.register('other', { skills: ['Echo'] })
    const client = await app.client('HTTP+JSON')
    const first = await sendForTask(client, sdkMessage({ skill: 'deep-search' }))
    const required = first.status?.message?.metadata?.['x402.payment.required'] as PaymentRequired
    const payload = await x402Payer(x402.buyer).createPaymentPayload(required)
    const pay = (task: Task) =>
      sendForTask(
        client,
        sdkMessage(
          {},
          {
            taskId: task.id,
            metadata: { [X402_STATUS]: 'payment-submitted', 'x402.payment.payload': payload },
          },
        ),
      )
    expect(stateOf(await pay(first))).toBe('TASK_STATE_WORKING')
    const second = await sendForTask(client, sdkMessage({ skill: 'deep-search' }))
    await expect(pay(second)).rejects.toThrow(/authorization_already_used/)
    expect(stateOf(await client.getTask({ tenant: '', id: second.id, historyLength: undefined }))).toBe(
      'TASK_STATE_INPUT_REQUIRED',
    )
    const otherClient = await app.client('JSONRPC', 'http://localhost:3000/api/agents/other/')
    await expect(
      otherClient.getTask({ tenant: '', id: first.id, historyLength: undefined }),
    ).rejects.toThrow()
    // A payment for the wrong amount is refused and the task still asks for the right one.
    const cheap = await x402Payer(x402.buyer).createPaymentPayload({
      ...required,
      accepts: [{ ...(required.accepts[0] as PaymentRequired['accepts'][number]), amount: '1' }],
    })
    const refused = await sendForTask(
      client,
      sdkMessage(
        {},
        {
          taskId: second.id,
          metadata: { [X402_STATUS]: 'payment-submitted', 'x402.payment.payload': cheap },
        },
      ),
    )
    expect(stateOf(refused)).toBe('TASK_STATE_INPUT_REQUIRED')
    expect(refused.status?.message?.metadata?.[X402_STATUS]).toBe('payment-failed')
    expect(refused.status?.message?.metadata?.['x402.payment.error']).toBe('INVALID_AMOUNT')
  })

  test("behavior: the marketplace's own card and agent: search agents, order a skill, read the task", async () => {
    const app = await market()
    const card = await app.call('GET', '/.well-known/agent-card.json', {
      headers: { accept: 'application/a2a+json' },
    })
    expect(card.headers.get('content-type')).toBe('application/a2a+json')
    expect(card.json.skills.map((skill: { id: string }) => skill.id)).toEqual([
      'search-agents',
      'order-skill',
      'read-task',
    ])
    const client = await app.client('JSONRPC', 'http://localhost:3000/')
    const found = await client.sendMessage({
      tenant: '',
      message: sdkMessage({ skill: 'search-agents', params: { q: 'finds' } }),
      configuration: undefined,
      metadata: undefined,
    })
    const page = ((found as Message).parts[0]?.content?.value ?? { agents: [] }) as {
      agents: { name: string }[]
    }
    const agents = page.agents
    expect(agents.map((agent) => agent.name)).toEqual(['seller'])
    const ordered = await sendForTask(
      client,
      sdkMessage({ skill: 'order-skill', params: { agent: 'seller', skill: 'echo' } }),
    )
    expect(stateOf(ordered)).toBe('TASK_STATE_WORKING')
    expect(stateOf(await client.getTask({ tenant: '', id: ordered.id, historyLength: undefined }))).toBe(
      'TASK_STATE_WORKING',
    )
  })

  test('error: a message without a skill, streaming, cancel and an unknown skill get A2A errors that say what to send', async () => {
    const app = await market()
    const client = await app.client('JSONRPC')
    await expect(sendForTask(client, sdkMessage({ nothing: true }))).rejects.toThrow(/data part/)
    await expect(sendForTask(client, sdkMessage({ skill: 'nope' }))).rejects.toThrow(/unknown_skill/)
    await expect(client.cancelTask({ tenant: '', id: 'task_x', metadata: undefined })).rejects.toThrow()
    const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
      body: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ data: { skill: 'echo' } }] } },
      headers: { 'a2a-version': '1.0' },
    })
    expect(rest.status).toBe(200)
    expect(rest.headers.get('content-type')).toBe('application/a2a+json')
    expect(rest.json.task.status.state).toBe('TASK_STATE_WORKING')
    const unknownAgent = await app.call('POST', '/a2a/agents/nobody', {
      body: { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } },
    })
    expect(unknownAgent.status).toBe(404)
  })
})
