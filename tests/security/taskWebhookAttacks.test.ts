import { describe, expect, test } from 'bun:test'
import { createFetchHandler, defaultConfig, Marketplace, memoryStore } from '@agentmarket/core'
import type { RouteRow } from '@agentmarket/core/routes'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { expectProblemShape, testApp } from '../../packages/server/src/testing/http.ts'

// Issue 37, finding 6: a buyer's per-task webhook is its alarm for the review window. The seller knows the task id
// (its work queue lists it), so the id alone must not let the seller read the endpoint (its URL carries the buyer's
// token) or delete it (the buyer would then miss the window, and silence releases the money to the seller). Each test
// asserts the safe outcome on every interface the operation is reachable through: /api and /api/v1 of the server,
// its MCP tools, and the core's createFetchHandler.

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are asserted field by field
type Json = any

const BUYER_URL = 'https://buyer.example/alarm?token=buyer-private-token'
const SKILLS = [{ name: 'Essay', type: 'free', sla_seconds: 600, review_seconds: 3600 }]

/** Every path a route row is served at over HTTP. */
const PREFIXES = ['/api', '/api/v1'] as const

describe('attacks on a buyer’s per-task webhook (issue 37, finding 6)', () => {
  test('attack: the seller, with the task id and its key, cannot list or delete the buyer’s task endpoint over /api or /api/v1', async () => {
    // Should happen: listing and deleting a task's endpoint take the secret answered when it was added (its owner
    // alone has it); the task id and the seller's key are 401; the answer never carries the URL; nothing is deleted.
    const app = await testApp(undefined, { webhookAllowPrivate: false })
    const seller = await app.register('seller', { skills: SKILLS })
    const order = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'essay' } })
    const id: string = order.json.task_id
    const base = `/agents/seller/tasks/${id}/webhooks`
    const buyerHook = await app.call('POST', `/api${base}`, { body: { url: BUYER_URL } })
    expect(buyerHook.status).toBe(201)
    // The seller's queue lists the task id: the seller holds every credential the path names.
    const queue = await app.call('GET', '/api/agents/seller/tasks', { key: seller.key })
    expect(JSON.stringify(queue.json)).toContain(id)
    // A seller-wide endpoint's secret and an endpoint the seller adds to its own task: their secrets are no key to
    // the buyer's.
    const sellerHook = await app.call('POST', '/api/agents/seller/webhooks', {
      key: seller.key,
      body: { url: 'https://seller.example/in' },
    })
    const sellerTaskHook = await app.call('POST', `/api${base}`, {
      body: { url: 'https://seller.example/task' },
    })
    expect([sellerHook.status, sellerTaskHook.status]).toEqual([201, 201])
    for (const prefix of PREFIXES) {
      for (const key of [undefined, seller.key, sellerHook.json.secret, 'whsec_forged']) {
        const listed = await app.call('GET', `${prefix}${base}`, { key })
        expectProblemShape(listed, 401)
        expect(listed.text).not.toContain('buyer.example')
        expectProblemShape(await app.call('DELETE', `${prefix}${base}/${buyerHook.json.id}`, { key }), 401)
      }
      // The endpoint the seller added itself: listed alone, and no key to delete the buyer's.
      const own = await app.call('GET', `${prefix}${base}`, { key: sellerTaskHook.json.secret })
      expect(own.json.webhooks.map((hook: Json) => hook.id)).toEqual([sellerTaskHook.json.id])
      expect(own.text).not.toContain('buyer.example')
      expectProblemShape(
        await app.call('DELETE', `${prefix}${base}/${buyerHook.json.id}`, {
          key: sellerTaskHook.json.secret,
        }),
        401,
      )
    }
    // The seller's own list and task reads carry nothing of it either.
    for (const path of [
      '/api/agents/seller/webhooks',
      '/api/agents/seller/tasks',
      `/api/agents/seller/tasks/${id}`,
    ])
      expect((await app.call('GET', path, { key: seller.key })).text).not.toContain('buyer.example')
    // The buyer, with its secret, still has its endpoint, and alone deletes it.
    const mine = await app.call('GET', `/api${base}`, { key: buyerHook.json.secret })
    expect(mine.json.webhooks).toMatchObject([{ id: buyerHook.json.id, url: BUYER_URL }])
    expect(
      (await app.call('DELETE', `/api/v1${base}/${buyerHook.json.id}`, { key: buyerHook.json.secret })).json,
    ).toEqual({ deleted: true })
    expectProblemShape(await app.call('GET', `/api${base}`, { key: buyerHook.json.secret }), 401)
  })

  test('attack: no MCP tool reaches a task’s endpoints, and the seller’s MCP reads of the task carry nothing of them', async () => {
    const app = await testApp(undefined, { webhookAllowPrivate: false })
    await app.register('seller', { skills: SKILLS })
    const id: string = (await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'essay' } })).json
      .task_id
    expect(
      (await app.call('POST', `/api/agents/seller/tasks/${id}/webhooks`, { body: { url: BUYER_URL } }))
        .status,
    ).toBe(201)
    const client = new Client({ name: 'task-webhook-attack', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
        fetch: (input, init) => app.app.handle(new Request(input, init)),
      }),
    )
    const { tools } = await client.listTools()
    expect(tools.filter((tool) => /webhook/i.test(`${tool.name} ${tool.description}`))).toEqual([])
    const read = await client.callTool({ name: 'get_task', arguments: { agent: 'seller', task_id: id } })
    expect(read.isError).toBeFalsy()
    expect(JSON.stringify(read)).not.toContain('buyer.example')
    await client.close()
  })

  test('attack: through createFetchHandler, the task id alone neither lists nor deletes a task’s endpoint', async () => {
    const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://market.test') })
    const handler = createFetchHandler(market)
    const send = async (
      method: RouteRow['method'],
      path: string,
      options: { body?: unknown; key?: string } = {},
    ) => {
      const headers = new Headers()
      if (options.body !== undefined) headers.set('content-type', 'application/json')
      if (options.key) headers.set('authorization', `Bearer ${options.key}`)
      const response = await handler.fetch(
        new Request(`http://market.test${path}`, {
          method,
          headers,
          ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
        }),
      )
      return { status: response.status, text: await response.text() }
    }
    const registered = JSON.parse(
      (await send('POST', '/api/agents/register', { body: { name: 'seller', skills: SKILLS } })).text,
    )
    const id = JSON.parse((await send('POST', '/api/agents/seller/tasks', { body: { skill: 'essay' } })).text)
      .task_id as string
    const base = `/agents/seller/tasks/${id}/webhooks`
    const added = await send('POST', `/api${base}`, { body: { url: BUYER_URL } })
    expect(added.status).toBe(201)
    const hook = JSON.parse(added.text)
    for (const prefix of PREFIXES)
      for (const key of [undefined, registered.apiKey as string]) {
        const listed = await send('GET', `${prefix}${base}`, { key })
        expect(listed.status).toBe(401)
        expect(listed.text).not.toContain('buyer.example')
        expect((await send('DELETE', `${prefix}${base}/${hook.id}`, { key })).status).toBe(401)
      }
    const mine = await send('GET', `/api${base}`, { key: hook.secret })
    expect(JSON.parse(mine.text).webhooks.map((one: Json) => one.url)).toEqual([BUYER_URL])
  })
})
