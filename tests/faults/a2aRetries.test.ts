import { describe, expect, test } from 'bun:test'
import { StoreUnavailableError } from '@agentmarket/core'
import { testApp } from '../../packages/server/src/testing/http.ts'
import { type A2aBinding, sdkClient, sdkMessage, sendForTask } from '../support/a2aClient.ts'

// A client that retries a SendMessage after a timeout sends the same message again, with the same messageId (A2A's
// client-generated id of a message). The retry gets the task the first one created, never a second order; the same
// messageId with another message is refused; a store that fails under the first message never leads to a second task.

const SELLER_URL = 'http://localhost:3000/api/agents/seller/'
const BINDINGS: A2aBinding[] = ['JSONRPC', 'HTTP+JSON']

/** A market with one seller of a free skill. */
async function market() {
  const app = await testApp()
  const { key } = await app.register('seller', { skills: ['Echo'] })
  const { key: otherKey } = await app.register('other', { skills: ['Echo'] })
  /** How many orders the seller has, whatever their state. */
  const orders = async () => (await app.market.listTasks('seller', key, { status: 'all' })).total
  return { ...app, key, otherKey, orders }
}

type Market = Awaited<ReturnType<typeof market>>

/** The official A2A client of the seller's card over `binding`, sending `headers` on every request. */
const sellerClient = (app: Market, binding: A2aBinding, headers: Record<string, string> = {}) =>
  sdkClient(app, binding, SELLER_URL, headers)

/** An order of the free skill as a user message, with the messageId `messageId`. */
const orderMessage = (messageId: string, q = 'rust') =>
  sdkMessage({ skill: 'echo', params: { q } }, { messageId })

/** The error `promise` fails with (the test fails when it succeeds). */
async function refusal(promise: Promise<unknown>): Promise<Error> {
  const outcome = await promise.then(
    () => null,
    (error: Error) => error,
  )
  if (outcome === null) throw new Error('expected a refusal, got an answer')
  return outcome
}

describe('A2A SendMessage: a retry with the same messageId never orders twice', () => {
  for (const binding of BINDINGS) {
    test(`behavior (${binding}, SDK client): a retried SendMessage gets the first task back, one order in all`, async () => {
      const app = await market()
      const client = await sellerClient(app, binding)
      const message = orderMessage(crypto.randomUUID())
      const first = await sendForTask(client, message)
      const retry = await sendForTask(client, message)
      expect(retry.id).toBe(first.id)
      expect(retry.contextId).toBe(first.contextId)
      expect(await app.orders()).toBe(1)
      // A new message (a new messageId) is a new order.
      const next = await sendForTask(client, orderMessage(crypto.randomUUID()))
      expect(next.id).not.toBe(first.id)
      expect(await app.orders()).toBe(2)
    })

    test(`behavior (${binding}, SDK client): the same messageId with another message is refused, saying so, and orders nothing`, async () => {
      const app = await market()
      const client = await sellerClient(app, binding)
      const messageId = crypto.randomUUID()
      await sendForTask(client, orderMessage(messageId, 'rust'))
      const error = await refusal(sendForTask(client, orderMessage(messageId, 'go')))
      expect(error.message).toContain('idempotency_key_reused')
      expect(error.message).toContain('messageId')
      expect(await app.orders()).toBe(1)
    })

    test(`attack (${binding}, SDK client): another caller sending a buyer's messageId gets its own order, never the buyer's task or conversation`, async () => {
      const app = await market()
      const buyer = await sellerClient(app, binding)
      const intruder = await sellerClient(app, binding, { authorization: `Bearer ${app.otherKey}` })
      const message = orderMessage(crypto.randomUUID())
      const first = await sendForTask(buyer, message)
      const theirs = await sendForTask(intruder, message)
      expect(theirs.id).not.toBe(first.id)
      expect(theirs.contextId).not.toBe(first.contextId)
      expect(await app.orders()).toBe(2)
    })

    test(`fault (${binding}, SDK client): the store fails with an unknown outcome under the first SendMessage; its retries never order a second task`, async () => {
      const app = await market()
      const client = await sellerClient(app, binding)
      const insert = app.store.insertTask.bind(app.store)
      let failing = true
      app.store.insertTask = async (...args) => {
        const stored = await insert(...args)
        // The order committed but its answer was lost: the client cannot tell whether it landed.
        if (failing) throw new StoreUnavailableError('unknown')
        return stored
      }
      const message = orderMessage(crypto.randomUUID())
      expect((await refusal(sendForTask(client, message))).message).toContain('outcome_unknown')
      failing = false
      expect(await app.orders()).toBe(1)
      // The first has ended: a retry at once learns its outcome is unknown, and so does one a minute later.
      expect((await refusal(sendForTask(client, message))).message).toContain('idempotency_outcome_unknown')
      app.clock.advance(61_000)
      const late = await refusal(sendForTask(client, message))
      expect(late.message).toContain('idempotency_outcome_unknown')
      expect(late.message).toContain('ListTasks')
      expect(await app.orders()).toBe(1)
    })
  }

  test('behavior (HTTP+JSON): an Idempotency-Key header names the retry (the same key and body: the first task; another body: refused)', async () => {
    const app = await market()
    const path = '/a2a/agents/seller/rest/message:send'
    const headers = { 'a2a-version': '1.0', 'idempotency-key': 'order-7' }
    const body = (messageId: string, q = 'rust') => ({
      message: { messageId, role: 'ROLE_USER', parts: [{ data: { skill: 'echo', params: { q } } }] },
    })
    const first = await app.call('POST', path, { headers, body: body('m-1') })
    expect(first.status).toBe(200)
    const retry = await app.call('POST', path, { headers, body: body('m-1') })
    expect(retry.json.task.id).toBe(first.json.task.id)
    // Another message under the same key is refused: 400 (the binding's status for a malformed request).
    const reused = await app.call('POST', path, { headers, body: body('m-1', 'go') })
    expect(reused.status).toBe(400)
    expect(reused.text).toContain('idempotency_key_reused')
    const badKey = await app.call('POST', path, {
      headers: { ...headers, 'idempotency-key': 'é'.repeat(3) },
      body: body('m-2'),
    })
    expect(badKey.status).toBe(400)
    expect(badKey.text).toContain('invalid_idempotency_key')
    expect(await app.orders()).toBe(1)
  })

  test('fault: a database outage under SendMessage is the binding’s internal error (JSON-RPC -32603; HTTP+JSON 503 UNAVAILABLE with Retry-After), never a malformed request', async () => {
    const app = await market()
    const insert = app.store.insertTask.bind(app.store)
    app.store.insertTask = async () => {
      throw new StoreUnavailableError('unchanged')
    }
    const message = (id: string) => ({
      messageId: id,
      role: 'ROLE_USER',
      parts: [{ data: { skill: 'echo', params: { q: 'down' } } }],
    })
    const rpc = await app.call('POST', '/a2a/agents/seller', {
      headers: { 'a2a-version': '1.0' },
      body: { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: message('d-1') } },
    })
    expect(rpc.json.error.code).toBe(-32603)
    expect(rpc.json.error.message).toContain('database_unavailable')
    const rest = await app.call('POST', '/a2a/agents/seller/rest/message:send', {
      headers: { 'a2a-version': '1.0' },
      body: { message: message('d-2') },
    })
    expect(rest.status).toBe(503)
    expect(['1', '2', '3']).toContain(rest.headers.get('retry-after') ?? '')
    expect(rest.json.error.status).toBe('UNAVAILABLE')
    app.store.insertTask = insert
    expect(await app.orders()).toBe(0)
  })

  test('behavior (JSON-RPC): the same messageId with another message is the binding’s invalid-params error', async () => {
    const app = await market()
    const call = (q: string) =>
      app.call('POST', '/a2a/agents/seller', {
        headers: { 'a2a-version': '1.0' },
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: {
            message: {
              messageId: 'm-1',
              role: 'ROLE_USER',
              parts: [{ data: { skill: 'echo', params: { q } } }],
            },
          },
        },
      })
    expect((await call('rust')).json.result.task.id).toBeString()
    const reused = await call('go')
    expect(reused.json.error.code).toBe(-32602)
    expect(reused.json.error.message).toContain('idempotency_key_reused')
    expect(await app.orders()).toBe(1)
  })
})
