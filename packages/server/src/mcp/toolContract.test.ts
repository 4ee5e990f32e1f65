import { describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'
import type { Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedBudget } from '../testing/budgets.ts'
import { PAYER, payment, SELLER, scriptedChain, TX_HASH } from '../testing/chain.ts'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'

// What every tool promises a client: its effects (annotations), the shape of its answers (outputSchema, which the
// official client checks each structuredContent against), one argument name for the agent, and plain HTTP access.

type App = Awaited<ReturnType<typeof testApp>>

/** The SDK's own validator of tool outputs, counting the answers it checked (proof that the check is on). */
function countingValidator() {
  const inner = new AjvJsonSchemaValidator()
  const counts = { checked: 0, invalid: 0 }
  return {
    counts,
    getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
      const check = inner.getValidator<T>(schema)
      return (input) => {
        const result = check(input)
        counts.checked++
        if (!result.valid) counts.invalid++
        return result
      }
    },
  }
}

/** The official client on the app's /mcp, its tools listed (which arms its output checks), with a bearer key. */
async function connect(app: App, apiKey?: string) {
  const validator = countingValidator()
  const client = new Client({ name: 'contract-test', version: '1.0.0' }, { jsonSchemaValidator: validator })
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    fetch: (input, init) => app.app.handle(new Request(input, init)),
    requestInit: apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : undefined,
  })
  await client.connect(transport)
  const { tools } = await client.listTools()
  /** Calls a tool that must succeed; its structuredContent must have been checked against its outputSchema. */
  async function call(name: string, args: Record<string, unknown>) {
    const before = validator.counts.checked
    const result = await client.callTool({ name, arguments: args })
    expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy()
    expect(validator.counts.checked, `${name} was not checked`).toBe(before + 1)
    expect(validator.counts.invalid).toBe(0)
    called.add(name)
    // biome-ignore lint/suspicious/noExplicitAny: tests read many shapes and assert on them
    return result.structuredContent as any
  }
  return { client, tools, call }
}

const called = new Set<string>()

// What each tool's operation does, written down here rather than read from the rows:
// [readOnly, destructive, idempotent, openWorld (reads the payment chain)].
const EFFECTS: Record<string, [boolean, boolean, boolean, boolean]> = {
  search_agents: [true, false, true, false],
  get_agent: [true, false, true, false],
  get_agent_card: [true, false, true, false],
  get_task: [true, false, true, false],
  list_users: [true, false, true, false],
  get_user: [true, false, true, false],
  live_feed: [true, false, true, false],
  register_agent: [false, false, false, false],
  update_agent: [false, true, true, false],
  heartbeat: [false, false, true, false],
  record_milestone: [false, false, false, false],
  create_task: [false, false, false, true],
  verify_payment: [false, false, true, true],
  complete_task: [false, false, true, false],
  // A decision lands once: a second one is refused.
  accept_delivery: [false, false, false, false],
  reject_delivery: [false, false, false, false],
  rate_task: [false, false, false, false],
  // A budget replaces the one in effect.
  set_budget: [false, true, true, false],
  get_budget: [true, false, true, false],
}

/** How a tool's description lists the fields it takes: "the fields sent (bio, model, …)". */
const FIELD_LIST = /the fields sent \(([^)]+)\)/

describe('MCP tool contract', () => {
  test('behavior: every tool declares its effects as annotations, and an object outputSchema', async () => {
    const app = await testApp()
    const { tools } = await connect(app)
    expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(EFFECTS).sort())
    for (const tool of tools) {
      const { readOnlyHint, destructiveHint, idempotentHint, openWorldHint } = tool.annotations ?? {}
      expect([readOnlyHint, destructiveHint, idempotentHint, openWorldHint], tool.name).toEqual(
        EFFECTS[tool.name] as boolean[],
      )
      expect(tool.outputSchema?.type, tool.name).toBe('object')
      expect(JSON.stringify(tool.outputSchema), tool.name).not.toContain('#/components')
    }
  })

  test('behavior: a tool that lists the fields it takes lists exactly the arguments it advertises', async () => {
    const { tools } = await connect(await testApp())
    const listing = tools.filter((tool) => FIELD_LIST.test(tool.description ?? ''))
    expect(listing.map((tool) => tool.name)).toContain('update_agent')
    for (const tool of listing) {
      const named = (FIELD_LIST.exec(tool.description ?? '')?.[1] ?? '').split(', ')
      // idempotency_key is every write's, not a field of the body the description lists.
      const taken = Object.keys(tool.inputSchema.properties ?? {}).filter(
        (field) => field !== 'agent' && field !== 'idempotency_key',
      )
      expect(named.sort(), tool.name).toEqual(taken.sort())
    }
  })

  test('behavior: every tool answers structuredContent that the client checks against its outputSchema', async () => {
    called.clear()
    const { chain, script } = scriptedChain()
    const app = await testApp('2026-06-01T12:00:00.000Z', { chain })
    const anonymous = await connect(app)
    const registered = await anonymous.call('register_agent', {
      name: 'seller',
      skills: [
        'ping',
        { name: 'Report', type: 'purchasable', price: 1.5 },
        { name: 'Essay', review_seconds: 60 },
      ],
    })
    const seller = await connect(app, registered.apiKey)
    await seller.call('update_agent', { agent: 'seller', walletAddress: SELLER })
    await seller.call('heartbeat', { agent: 'seller' })
    await seller.call('record_milestone', { agent: 'seller', date: '2026-05-01', title: 'First' })
    await anonymous.call('search_agents', { q: 'sell' })
    await anonymous.call('get_agent', { agent: 'seller' })
    const card = await anonymous.call('get_agent_card', { agent: 'seller' })

    // Paid before ordering, not final yet: 202 with the verification (the schema's second answer).
    const early: Hex = `0x${'ee'.repeat(32)}`
    const proof = card._extensions.commerce.payer_proof
    const earlySignature = await PAYER.signTypedData({
      ...proof,
      message: { ...proof.message, txHash: early },
    })
    script.heads = [100n]
    script.receipts = [[{ ...payment(100n), transactionHash: early }]]
    const awaiting = await anonymous.call('create_task', {
      agent: 'seller',
      skill: 'report',
      tx_hash: early,
      payer_signature: earlySignature,
    })
    expect(awaiting.verification.state).toBe('pending')

    // Ordered, then paid: pending at two confirmations, then verified.
    const task = await anonymous.call('create_task', { agent: 'seller', skill: 'report' })
    const taskProof = task.payment.payer_proof
    const signature = await PAYER.signTypedData({
      ...taskProof,
      message: { ...taskProof.message, txHash: TX_HASH },
    })
    const verify = { agent: 'seller', task_id: task.task_id, tx_hash: TX_HASH, payer_signature: signature }
    script.receipts = [[payment(100n)]]
    script.heads = [101n]
    expect((await anonymous.call('verify_payment', verify)).state).toBe('pending')
    script.heads = [102n]
    expect((await anonymous.call('verify_payment', verify)).verified).toBe(true)
    await anonymous.call('get_task', { agent: 'seller', task_id: task.task_id })
    const done = await seller.call('complete_task', {
      agent: 'seller',
      task_id: task.task_id,
      result_url: 'https://results.example/r',
    })
    expect(done.status).toBe('completed')
    // Rated by the wallet that paid it.
    const rating = { ...done.rate.message, score: 5, comment: 'fast' }
    const rated = await anonymous.call('rate_task', {
      agent: 'seller',
      task_id: task.task_id,
      score: 5,
      comment: 'fast',
      signature: await PAYER.signTypedData({ ...done.rate, message: rating }),
    })
    expect(rated.rating.score).toBe(5)
    // Deliveries under review, accepted and rejected by the buyer's wallet.
    for (const decision of ['accept', 'reject'] as const) {
      const essay = await anonymous.call('create_task', {
        agent: 'seller',
        skill: 'essay',
        buyer_wallet: PAYER.address,
      })
      const ids = { agent: 'seller', task_id: essay.task_id }
      const delivered = await seller.call('complete_task', {
        ...ids,
        result_url: 'https://results.example/e',
      })
      const message = { ...delivered.review.message, decision, reason: 'because' }
      const decided = await anonymous.call(`${decision}_delivery`, {
        ...ids,
        reason: 'because',
        signature: await PAYER.signTypedData({ ...delivered.review, message }),
      })
      expect(decided.status).toBe(decision === 'accept' ? 'completed' : 'rejected')
    }
    const ann = privateKeyToAccount(generatePrivateKey())
    await app.pair('ann', registered.pairingCode, ann)
    const now = app.clock.now().getTime()
    const budget = await signedBudget(
      ann,
      {
        agent: 'seller',
        perTaskMax: 5,
        perDayMax: 20,
        expiresAt: new Date(now + 86_400_000),
        issuedAt: new Date(now - 1000),
      },
      TEST_BASE_URL,
    )
    expect((await anonymous.call('set_budget', { agent: 'seller', ...budget })).per_day_max).toBe(20)
    expect((await seller.call('get_budget', { agent: 'seller' })).remaining_today).toBe(20)
    await anonymous.call('list_users', {})
    await anonymous.call('get_user', { username: 'ann' })
    await anonymous.call('live_feed', { limit: 20 })
    expect([...called].sort()).toEqual(Object.keys(EFFECTS).sort())
  })

  test('behavior: tools that named the agent `name` still take it, but advertise only `agent`', async () => {
    const app = await testApp()
    const { key } = await app.register('legacy')
    const { tools, call, client } = await connect(app, key)
    for (const tool of tools) {
      const properties = Object.keys(tool.inputSchema.properties ?? {})
      if (tool.name === 'register_agent') continue // `name` is the new agent's own field there
      expect(properties, tool.name).not.toContain('name')
      if (!['search_agents', 'list_users', 'live_feed', 'get_user'].includes(tool.name))
        expect(tool.inputSchema.required, tool.name).toContain('agent')
    }
    expect((await call('get_agent', { name: 'LEGACY' })).name).toBe('legacy')
    expect((await call('get_agent_card', { name: 'legacy' })).name).toBe('legacy')
    expect((await call('heartbeat', { name: 'legacy' })).agent).toBe('legacy')
    expect((await call('update_agent', { name: 'legacy', bio: 'old client' })).bio).toBe('old client')
    expect((await call('record_milestone', { name: 'legacy', date: '2026-05-01', title: 'x' })).title).toBe(
      'x',
    )
    expect((await call('heartbeat', { name: 'legacy', agent: 'legacy' })).agent).toBe('legacy')
    // Tools that said `agent` before never took `name`: it is not an alias there.
    const order = await client.callTool({ name: 'create_task', arguments: { name: 'legacy', skill: 'ping' } })
    expect(order.isError).toBe(true)
  })

  test('behavior: the README names every tool the server lists, and no other', async () => {
    const app = await testApp()
    const listed = await app.app.handle(
      new Request('http://localhost/mcp', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      }),
    )
    const { result } = (await listed.json()) as { result: { tools: { name: string }[] } }
    const readme = await Bun.file(new URL('../../../../README.md', import.meta.url)).text()
    const section = readme.slice(
      readme.indexOf('### MCP'),
      readme.indexOf('\n### ', readme.indexOf('### MCP') + 1),
    )
    const named = section.slice(0, section.indexOf('; their input schemas'))
    const inReadme = [...named.matchAll(/`([a-z_]+)`/g)].map((match) => match[1]).sort()
    expect(inReadme).toEqual(result.tools.map((tool) => tool.name).sort())
  })

  test("behavior: a raw POST with the README's headers lists and calls tools; without Accept it is 406", async () => {
    const app = await testApp()
    await app.register('curled')
    const post = (body: unknown, headers: Record<string, string>) =>
      app.app.handle(
        new Request('http://localhost/mcp', { method: 'POST', headers, body: JSON.stringify(body) }),
      )
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const listed = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers)
    expect(listed.status).toBe(200)
    expect(listed.headers.get('content-type')).toStartWith('application/json')
    const { result } = await listed.json()
    expect(result.tools.find((tool: { name: string }) => tool.name === 'heartbeat').annotations).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    })
    const answered = await post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'get_agent', arguments: { agent: 'curled' } },
      },
      headers,
    )
    expect((await answered.json()).result.structuredContent.name).toBe('curled')
    const refused = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { 'content-type': 'application/json' },
    )
    expect(refused.status).toBe(406)
  })
})

// Two MCP sessions over the in-process app: a loaded machine takes seconds, so the bound is wide (not the verdict).
describe('MCP tools take the Idempotency-Key as idempotency_key', () => {
  test('behavior: a retried record_milestone with the same idempotency_key records one milestone; another body is refused', async () => {
    const app = await testApp()
    const registered = await (await connect(app)).call('register_agent', { name: 'retrier' })
    const agent = await connect(app, registered.apiKey)
    expect(
      agent.tools.find((tool) => tool.name === 'record_milestone')?.inputSchema.properties,
    ).toHaveProperty('idempotency_key')
    const args = { agent: 'retrier', date: '2026-05-01', title: 'Shipped', idempotency_key: 'ms-1' }
    const first = await agent.call('record_milestone', args)
    const retry = await agent.call('record_milestone', args)
    expect(retry).toEqual(first)
    const other = await agent.client.callTool({
      name: 'record_milestone',
      arguments: { ...args, title: 'Other' },
    })
    expect(other.isError).toBe(true)
    expect(JSON.stringify(other.content)).toContain('idempotency_key_reused')
    const listed = await app.call('GET', '/api/agents/retrier/milestones')
    expect(listed.json.milestones).toHaveLength(1)
  }, 300_000)

  test('behavior: a key sent over MCP and retried over HTTP (its body keys in another order) is one milestone, replayed', async () => {
    const app = await testApp()
    const registered = await (await connect(app)).call('register_agent', { name: 'crosser' })
    const agent = await connect(app, registered.apiKey)
    const first = await agent.call('record_milestone', {
      agent: 'crosser',
      date: '2026-05-01',
      title: 'Both ways',
      idempotency_key: 'cross-1',
    })
    // Before: the HTTP retry was another scope (its credential counted twice) and recorded a second milestone.
    const retry = await app.call('POST', '/api/agents/crosser/milestones', {
      key: registered.apiKey,
      body: { title: 'Both ways', date: '2026-05-01' },
      headers: { 'idempotency-key': 'cross-1' },
    })
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json.id).toBe(first.id)
    const listed = await app.call('GET', '/api/agents/crosser/milestones')
    expect(listed.json.milestones).toHaveLength(1)
  }, 300_000)

  test('behavior: a retried create_task with the same idempotency_key answers the same task', async () => {
    const app = await testApp()
    await app.register('shop', { skills: ['Ping'] })
    const buyer = await connect(app)
    const args = { agent: 'shop', skill: 'ping', idempotency_key: 'order-1' }
    const first = await buyer.call('create_task', args)
    expect((await buyer.call('create_task', args)).task_id).toBe(first.task_id)
    expect((await buyer.call('create_task', { ...args, idempotency_key: 'order-2' })).task_id).not.toBe(
      first.task_id,
    )
  }, 300_000)
})
