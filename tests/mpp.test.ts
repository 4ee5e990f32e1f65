import { describe, expect, setSystemTime, spyOn, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { validate } from '@readme/openapi-parser'
import { Challenge, Credential } from 'mppx'
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client'
import { validate as validateDiscovery } from 'mppx/discovery'
import { memoryStore, persistentMppSecret } from '../packages/core/src/index.ts'
import { currentScope } from '../packages/core/src/ports/requestScope.ts'
import { READ_CACHE_ENTRIES } from '../packages/core/src/ReadCache.ts'
import { testApp } from '../packages/server/src/testing/http.ts'
import { startMarketServer } from './support/process.ts'
import { type ScriptedTempo, scriptedTempo, TEMPO_USDC_E, tempoPayer } from './support/tempo.ts'

const SELLER_WALLET = tempoPayer(1).address
const SECRET = 'mpp-test-secret-key-of-at-least-32-bytes!!'
const SKILLS = [
  { name: 'Summary', type: 'purchasable', price: '0.01' },
  { name: 'Ping', type: 'free' },
]

/** An app taking machine payments on a scripted Tempo node, with sellers `seller` and `other` (same price), and their keys. */
async function paidMarket() {
  const node = scriptedTempo()
  const app = await testApp('2026-06-01T12:00:00.000Z', {
    mpp: {
      secretKey: SECRET,
      realm: 'localhost',
      currency: TEMPO_USDC_E,
      getClient: () => node.client('server'),
    },
  })
  const keys: Record<string, string> = {}
  for (const name of ['seller', 'other']) {
    const { key } = await app.register(name, { skills: SKILLS })
    keys[name] = key
    await app.call('PUT', `/api/agents/${name}`, { key, body: { walletAddress: SELLER_WALLET } })
  }
  const handle = (input: RequestInfo | URL, init?: RequestInit) => app.app.handle(new Request(input, init))
  return { ...app, node, handle, keys }
}

/** A buyer paying with the real mppx client through the app, in `mode`; `credentials` collects what it sent. */
function buyer(node: ScriptedTempo, handle: typeof fetch, mode: 'pull' | 'push' = 'pull') {
  const credentials: string[] = []
  const client = MppxClient.create({
    polyfill: false,
    fetch: handle,
    methods: [tempoClient.charge({ account: tempoPayer(2), getClient: () => node.client('client'), mode })],
  })
  client.onCredentialCreated(({ credential }) => {
    credentials.push(credential)
  })
  return { client, credentials }
}

const post = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
})

describe('POST /api/agents/{name}/tasks/{skill_slug} (MPP)', () => {
  test('behavior: without a credential, a 402 challenge mppx parses: 0.01 USDC.e is "10000" base units to the seller', async () => {
    const { handle } = await paidMarket()
    const answer = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post({ params: { q: 1 } }),
    )
    expect(answer.status).toBe(402)
    const challenge = Challenge.fromResponse(answer)
    expect(challenge).toMatchObject({ method: 'tempo', intent: 'charge', realm: 'localhost' })
    expect(challenge.request).toMatchObject({
      amount: '10000',
      currency: TEMPO_USDC_E,
      recipient: SELLER_WALLET,
    })
    expect(Date.parse(String(challenge.expires))).toBeGreaterThan(Date.now())
    expect(challenge.description).toContain('0.01 USDC.e')
    // A problem like every other, with its code, and the challenge still in WWW-Authenticate.
    expect(answer.headers.get('content-type')).toBe('application/problem+json')
    expect(await answer.json()).toMatchObject({ status: 402, code: 'payment_required' })
  })

  test('error: an order without a payment is refused as any order, before a challenge; an agent registered after its 404 gets its 402 at once', async () => {
    const { handle, register, call } = await paidMarket()
    const order = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const answer = await handle(`http://localhost/api/agents/${path}`, post(body, headers))
      const json = (await answer.json()) as { code: string; detail: string }
      return { status: answer.status, code: json.code, detail: json.detail }
    }
    const nobody = await order('Newcomer/tasks/summary', {})
    expect(nobody).toMatchObject({ status: 404, code: 'agent_not_found' })
    expect(nobody.detail).toContain('"Newcomer"')
    // The same name asked again is refused the same way, spelt as asked.
    expect((await order('newcomer/tasks/summary', {})).detail).toContain('"newcomer"')
    expect(await order('seller/tasks/nothing', {})).toMatchObject({ status: 404, code: 'skill_not_found' })
    expect(await order('seller/tasks/summary', { params: 5 })).toMatchObject({ status: 400 })
    // A market taking MPP alone offers its challenge even to a client refusing it: there is nothing else to offer.
    expect(await order('seller/tasks/summary', {}, { 'accept-payment': 'tempo/charge;q=0' })).toMatchObject({
      status: 402,
      code: 'payment_required',
    })
    const { key } = await register('newcomer', { skills: SKILLS })
    // Registered without a wallet: its paid skill cannot be ordered yet.
    expect(await order('newcomer/tasks/summary', {})).toMatchObject({
      status: 409,
      code: 'seller_has_no_wallet',
    })
    await call('PUT', '/api/agents/newcomer', { key, body: { walletAddress: SELLER_WALLET } })
    expect(await order('newcomer/tasks/summary', {})).toMatchObject({ status: 402, code: 'payment_required' })
    await call('DELETE', '/api/agents/newcomer/listing', { key })
    expect(await order('newcomer/tasks/summary', {})).toMatchObject({ status: 409, code: 'agent_deleted' })
  })

  test("behavior: an order without a payment runs outside the request's scopes (no chain, no write); a free skill's order, which writes, and a paid one run in them", async () => {
    const { handle, store } = await paidMarket()
    const seen: string[] = []
    /** `method` of the store, noting the scope each call runs in: none, or a request's (and its write count). */
    const noting = <A extends unknown[], R>(name: string, method: (...args: A) => R) =>
      ((...args: A) => {
        const scope = currentScope()
        seen.push(`${name} ${scope ? `request=${scope.request} writing=${scope.writing}` : 'none'}`)
        return method(...args)
      }) as typeof method
    store.getAgent = noting('getAgent', store.getAgent.bind(store))
    store.insertTask = noting('insertTask', store.insertTask.bind(store))
    const challenge = await handle('http://localhost/api/agents/seller/tasks/summary', post({}))
    expect(challenge.status).toBe(402)
    const free = await handle('http://localhost/api/agents/seller/tasks/ping', post({}))
    expect(free.status).toBe(201)
    // A credential (here a malformed one) reads its seller afresh, in the request's scopes.
    const paying = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post({}, { authorization: 'Payment not-a-credential' }),
    )
    expect(paying.status).toBe(402)
    expect(seen).toEqual([
      'getAgent none',
      'insertTask request=true writing=true',
      'getAgent request=true writing=true',
    ])
  })

  test('attack: a flood of orders for names no agent has evicts no seller: its 402 still reads nothing, and a repeated 404 reads nothing either', async () => {
    const { handle, store } = await paidMarket()
    const reads: string[] = []
    const getAgent = store.getAgent.bind(store)
    store.getAgent = (name) => {
      reads.push(name)
      return getAgent(name)
    }
    const order = async (name: string) =>
      (await handle(`http://localhost/api/agents/${name}/tasks/summary`, post({}))).status
    expect(await order('seller')).toBe(402)
    for (let index = 0; index < READ_CACHE_ENTRIES + 10; index += 1)
      expect(await order(`nobody-${index}`)).toBe(404)
    reads.length = 0
    expect(await order('seller')).toBe(402)
    expect(await order(`nobody-${READ_CACHE_ENTRIES + 9}`)).toBe(404)
    expect(reads).toEqual([])
  })

  for (const mode of ['pull', 'push'] as const) {
    test(`behavior: the real mppx client pays in ${mode} mode and gets the task paid with a Payment-Receipt`, async () => {
      const { node, handle, call } = await paidMarket()
      const { client } = buyer(node, handle as typeof fetch, mode)
      const paid = await client.fetch(
        'http://localhost/api/agents/seller/tasks/summary',
        post({ buyer: 'scout' }),
      )
      expect(paid.status).toBe(201)
      expect(paid.headers.get('payment-receipt')).toBeTruthy()
      const task = (await paid.json()) as { task_id: string; payment: { tx_hash: string } }
      expect(task).toMatchObject({
        status: 'paid',
        skill: 'Summary',
        buyer: 'scout',
        payment: {
          method: 'mpp',
          chain: 'tempo',
          chain_id: 4217,
          usdc_contract: TEMPO_USDC_E,
          paid_amount: 0.01,
        },
      })
      expect(node.receipt(task.payment.tx_hash as `0x${string}`)).toBeTruthy()
      const read = await call('GET', `/api/agents/seller/tasks/${task.task_id}`)
      expect(read.json.status).toBe('paid')
    })
  }

  test('behavior: the same credential again answers the task it paid for, never a second task', async () => {
    const { node, handle, call } = await paidMarket()
    const { client, credentials } = buyer(node, handle as typeof fetch)
    const body = { params: { q: 'once' } }
    const first = await client.fetch('http://localhost/api/agents/seller/tasks/summary', post(body))
    const task = (await first.json()) as { task_id: string }
    const again = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post(body, { authorization: credentials[0] ?? '' }),
    )
    expect(again.status).toBe(200)
    expect(((await again.json()) as { task_id: string }).task_id).toBe(task.task_id)
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(1)
  })

  test('error: a credential is bound to its agent, skill and body', async () => {
    const { node, handle, call } = await paidMarket()
    const first = await handle('http://localhost/api/agents/seller/tasks/summary', post({ params: { q: 1 } }))
    const { client } = buyer(node, handle as typeof fetch)
    const credential = await client.createCredential(first)
    const otherAgent = await handle(
      'http://localhost/api/agents/other/tasks/summary',
      post({ params: { q: 1 } }, { authorization: credential }),
    )
    expect(otherAgent.status).toBe(402)
    const otherBody = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post({ params: { q: 2 } }, { authorization: credential }),
    )
    expect(otherBody.status).toBe(402)
    for (const name of ['seller', 'other'])
      expect((await call('GET', `/api/agents/${name}/tasks?status=all`)).json.total).toBe(0)
    const right = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post({ params: { q: 1 } }, { authorization: credential }),
    )
    expect(right.status).toBe(201)
  })

  test('error: a credential with a tampered amount, or made from an expired challenge, is refused and pays nothing', async () => {
    const { node, handle, call } = await paidMarket()
    const body = { params: { q: 1 } }
    const challenge = await handle('http://localhost/api/agents/seller/tasks/summary', post(body))
    const credential = await buyer(node, handle as typeof fetch).client.createCredential(challenge)
    const decoded = Credential.deserialize(credential)
    const cheaper = Credential.serialize({
      ...decoded,
      challenge: { ...decoded.challenge, request: { ...decoded.challenge.request, amount: '1' } },
    })
    const tampered = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post(body, { authorization: cheaper }),
    )
    expect(tampered.status).toBe(402)
    setSystemTime(new Date(Date.now() + 10 * 60_000))
    try {
      const late = await handle(
        'http://localhost/api/agents/seller/tasks/summary',
        post(body, { authorization: credential }),
      )
      expect(late.status).toBe(402)
      expect(await late.text()).toContain('xpired')
    } finally {
      setSystemTime()
    }
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(0)
  })

  test('attack: a price or wallet change shows in the next challenge at once; a credential for the old one pays nothing', async () => {
    const { node, handle, call, keys } = await paidMarket()
    const key = keys.seller
    const url = 'http://localhost/api/agents/seller/tasks/summary'
    const body = { params: { q: 'price' } }
    const { client } = buyer(node, handle as typeof fetch)
    // The first challenge is made, and its seller and template kept, at the old price.
    const old = await client.createCredential(await handle(url, post(body)))
    const raised = SKILLS.map((skill) => (skill.type === 'purchasable' ? { ...skill, price: '0.02' } : skill))
    const update = await call('PUT', '/api/agents/seller', { key, body: { skills: raised } })
    expect(update.status).toBe(200)
    const next = Challenge.fromResponse(await handle(url, post(body)))
    expect(next.request).toMatchObject({ amount: '20000', recipient: SELLER_WALLET })
    const refused = await handle(url, post(body, { authorization: old }))
    expect(refused.status).toBe(402)
    expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(0)
    const otherWallet = tempoPayer(3).address
    expect(
      (await call('PUT', '/api/agents/seller', { key, body: { walletAddress: otherWallet } })).status,
    ).toBe(200)
    const moved = Challenge.fromResponse(await handle(url, post(body)))
    expect(moved.request).toMatchObject({ amount: '20000', recipient: otherWallet })
    const paid = await client.fetch(url, post(body))
    expect(paid.status).toBe(201)
    expect(await paid.json()).toMatchObject({ status: 'paid', payment: { paid_amount: 0.02 } })
  })

  test('behavior: a broadcast mined whose answer failed is found on the chain (201), and a retry of the credential gets its task', async () => {
    const { node, handle, call } = await paidMarket()
    const consoleError = spyOn(console, 'error').mockImplementation(() => {})
    try {
      const body = { params: { q: 'crash' } }
      const challenge = await handle('http://localhost/api/agents/seller/tasks/summary', post(body))
      const credential = await buyer(node, handle as typeof fetch).client.createCredential(challenge)
      node.failNextBroadcast()
      // The market reads the mined transfer from the chain: the first answer is the paid task (issue 39).
      const first = await handle(
        'http://localhost/api/agents/seller/tasks/summary',
        post(body, { authorization: credential }),
      )
      expect(first.status).toBe(201)
      expect(first.headers.get('payment-receipt')).toBeTruthy()
      const task = (await first.json()) as { task_id: string; payment: { tx_hash: `0x${string}` } }
      expect(node.receipt(task.payment.tx_hash)).toBeTruthy()
      const again = await handle(
        'http://localhost/api/agents/seller/tasks/summary',
        post(body, { authorization: credential }),
      )
      expect(again.status).toBe(200)
      expect(((await again.json()) as { task_id: string }).task_id).toBe(task.task_id)
      const elsewhere = await handle(
        'http://localhost/api/agents/other/tasks/summary',
        post(body, { authorization: credential }),
      )
      expect(elsewhere.status).toBe(402)
      expect((await call('GET', '/api/agents/seller/tasks?status=all')).json.total).toBe(1)
    } finally {
      consoleError.mockRestore()
    }
  })

  test('behavior: row 8 with a Payment credential and the skill slug in the body behaves as the per-skill path', async () => {
    const { node, handle } = await paidMarket()
    const challenge = await handle(
      'http://localhost/api/agents/seller/tasks/summary',
      post({ params: { q: 1 } }),
    )
    const credential = await buyer(node, handle as typeof fetch).client.createCredential(challenge)
    const paid = await handle(
      'http://localhost/api/agents/seller/tasks',
      post({ skill: 'summary', params: { q: 1 } }, { authorization: credential }),
    )
    expect(paid.status).toBe(201)
    expect(await paid.json()).toMatchObject({ status: 'paid', payment: { method: 'mpp' } })
  })

  test('behavior: a free skill on its per-skill path is created paid without a payment; an unknown slug is 404', async () => {
    const { handle } = await paidMarket()
    const free = await handle('http://localhost/api/agents/seller/tasks/ping', post({}))
    expect(free.status).toBe(201)
    expect(((await free.json()) as { status: string }).status).toBe('paid')
    expect((await handle('http://localhost/api/agents/seller/tasks/nope', post({}))).status).toBe(404)
  })
})

describe('GET /api/openapi.json with machine payments', () => {
  test('behavior: one operation per purchasable (agent, skill) with x-payment-info, valid for mppx, with an ETag', async () => {
    const { handle, call, register } = await paidMarket()
    const first = await handle('http://localhost/api/openapi.json')
    const document = (await first.json()) as {
      paths: Record<string, Record<string, Record<string, unknown>>>
    }
    const paid = document.paths['/api/agents/seller/tasks/summary']?.post
    expect(paid?.['x-payment-info']).toEqual({
      amount: '10000',
      method: 'tempo',
      intent: 'charge',
      currency: TEMPO_USDC_E,
      description: 'Summary by seller: 0.01 USDC.e',
    })
    expect(document.paths['/api/agents/other/tasks/summary']).toBeDefined()
    expect(document.paths['/api/agents/seller/tasks/ping']).toBeUndefined()
    expect(validateDiscovery(document).filter((problem) => problem.severity === 'error')).toEqual([])
    expect((await validate(structuredClone(document) as never)).valid).toBe(true)

    const etag = first.headers.get('etag') ?? ''
    const unchanged = await handle('http://localhost/api/openapi.json', {
      headers: { 'if-none-match': etag },
    })
    expect(unchanged.status).toBe(304)
    await register('newcomer', { skills: SKILLS })
    expect((await call('GET', '/api/openapi.json', { headers: { 'if-none-match': etag } })).status).toBe(304)
    const { key } = await register('seller2', { skills: SKILLS })
    await call('PUT', '/api/agents/seller2', { key, body: { walletAddress: SELLER_WALLET } })
    const changed = await call('GET', '/api/openapi.json', { headers: { 'if-none-match': etag } })
    expect(changed.status).toBe(200)
    expect(changed.json.paths['/api/agents/seller2/tasks/summary']).toBeDefined()
  })
})

describe('persistentMppSecret', () => {
  test('behavior: made once from 32 random bytes, then the same for every caller', async () => {
    const store = memoryStore()
    let calls = 0
    const random = { bytes: (n: number) => new Uint8Array(n).fill(++calls) }
    const first = await persistentMppSecret(store, random)
    expect(first).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await persistentMppSecret(store, random)).toBe(first)
  })
})

describe('bun start with machine payments', () => {
  test('behavior: two processes on one database share the generated secret; a credential pays once across them', async () => {
    const node = scriptedTempo()
    const rpc = await node.serve()
    const folder = mkdtempSync(join(tmpdir(), 'agentmarket-mpp-'))
    // One public address for both, as behind a load balancer: the challenge's realm is its host.
    const env = {
      HOME: folder,
      BASE_URL: 'http://localhost:3000',
      DATABASE_URL: `file:${join(folder, 'market.db')}`,
      TEMPO_RPC_URL: rpc.url,
    }
    const servers = await Promise.all([startMarketServer(env), startMarketServer(env)])
    try {
      const [a = '', b = ''] = servers.map((server) => server.base)
      const registered = (await (
        await fetch(`${a}/api/agents/register`, post({ name: 'seller', skills: SKILLS }))
      ).json()) as { apiKey: string }
      await fetch(`${a}/api/agents/seller`, {
        ...post({ walletAddress: SELLER_WALLET }),
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${registered.apiKey}` },
      })
      const url = (base: string) => `${base}/api/agents/seller/tasks/summary`
      const challenge = await fetch(url(a), post({ params: { q: 1 } }))
      expect(challenge.status).toBe(402)
      const credential = await buyer(node, fetch).client.createCredential(challenge)
      const paid = await fetch(url(b), post({ params: { q: 1 } }, { authorization: credential }))
      expect(paid.status).toBe(201)
      const task = (await paid.json()) as { task_id: string }
      const again = await fetch(url(a), post({ params: { q: 1 } }, { authorization: credential }))
      expect(again.status).toBe(200)
      expect(((await again.json()) as { task_id: string }).task_id).toBe(task.task_id)
      const list = (await (await fetch(`${b}/api/agents/seller/tasks?status=all`)).json()) as {
        total: number
      }
      expect(list.total).toBe(1)
    } finally {
      for (const server of servers) server.stop()
      await rpc.stop()
      rmSync(folder, { recursive: true, force: true })
    }
  }, 300_000)
})
