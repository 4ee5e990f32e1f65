import { describe, expect, test } from 'bun:test'
import type { ChainReader, SkillView } from '@agentmarket/core'
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { PAYER, payment, SELLER } from '../testing/chain.ts'
import { TEST_BASE_URL, testApp } from '../testing/http.ts'
import { agentPage } from './pages.ts'

const HTML = { accept: 'text/html,application/xhtml+xml' }

/** A chain on which every asked hash is a mined 1.5 USDC transfer from PAYER to SELLER, well confirmed. */
const paidChain: ChainReader = {
  headBlock: async () => 200n,
  receipts: async (hashes) => hashes.map((hash) => payment(100n, hash)),
}

type App = Awaited<ReturnType<typeof testApp>>
const page = (app: App, path: string) => app.call('GET', path, { headers: HTML })
const count = (text: string, part: string) => text.split(part).length - 1

/** Registers `n` agents named `prefix-1`…; returns their keys. */
async function agents(app: App, n: number, prefix = 'agent') {
  const keys: string[] = []
  for (let i = 1; i <= n; i++) keys.push((await app.register(`${prefix}-${i}`)).key)
  return keys
}

/** A seller of a paid skill, a task of it paid on chain and then delivered, in that order, per hash given. */
async function deliveredPaidTasks(app: App, hashes: Hex[]) {
  const { key } = await app.register('seller', {
    skills: [{ name: 'Report', type: 'purchasable', price: 1.5 }],
  })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: SELLER } })
  const ids: string[] = []
  for (const hash of hashes) {
    const created = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'report' } })
    const proof = created.json.payment.payer_proof
    const signature = await PAYER.signTypedData({ ...proof, message: { ...proof.message, txHash: hash } })
    const verified = await app.call(
      'POST',
      `/api/agents/seller/tasks/${created.json.task_id}/verify-payment`,
      {
        body: { tx_hash: hash, payer_signature: signature },
      },
    )
    expect(verified.status).toBe(200)
    ids.push(created.json.task_id)
  }
  return { key, ids }
}

describe('the agent list page', () => {
  test('behavior: a page past the end says there are no more results and links to the last page', async () => {
    const app = await testApp()
    await agents(app, 23)
    const past = await page(app, '/?offset=40')
    expect(past.status).toBe(200)
    expect(past.text).toContain('No more results')
    expect(past.text).toContain('There are 23 agents')
    expect(past.text).not.toContain('No agents yet')
    expect(past.text).not.toMatch(/41–40|41–\d+ of/)
    const back = /href="([^"]+)">← Back to the last page/.exec(past.text)?.[1] ?? ''
    expect(back).toBe('/?offset=20')
    const last = await page(app, back)
    expect(count(last.text, 'data-agent=')).toBe(3)
    expect(last.text).toContain('21–23 of 23')
  })

  test('behavior: the query goes to the core as sent; a refused one shows what is wrong, with a 400', async () => {
    const app = await testApp()
    await agents(app, 2)
    const refused = await page(app, '/?offset=-1')
    expect(refused.status).toBe(400)
    expect(refused.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(refused.text).toContain('data-problem="invalid_query"')
    expect(refused.text).toContain('<code>/offset</code> must be a whole number')
    // The form keeps what was sent, and a blank field is no filter.
    const filtered = await page(app, '/?q=agent-2&type=&status=&sort=activity&owner=')
    expect(filtered.status).toBe(200)
    expect(count(filtered.text, 'data-agent=')).toBe(1)
    expect(filtered.text).toContain('<option value="activity" selected>')
    expect(filtered.text).toContain('value="agent-2"')
  })

  test('behavior: an empty search says so once, with a way back; an empty market invites sellers', async () => {
    const app = await testApp()
    const empty = await page(app, '/')
    expect(empty.text).toContain('No agents yet')
    expect(empty.text).toContain('data-seller-cta')
    expect(empty.text).toContain(`curl -X POST ${TEST_BASE_URL}/api/agents/register`)
    await agents(app, 2)
    const none = await page(app, '/?q=nothing-like-this')
    expect(none.status).toBe(200)
    expect(count(none.text, 'No agent matches')).toBe(1)
    expect(none.text).not.toContain('0 agents')
    expect(none.text).toContain('<a href="/">See all agents</a>')
  })

  test('behavior: the seller call to action, followed as written, registers an agent', async () => {
    const app = await testApp()
    await agents(app, 1)
    const home = await page(app, '/')
    const command = /<pre><code>(curl -X POST [^<]+)<\/code><\/pre>/.exec(home.text)?.[1] ?? ''
    const body = /-d &#39;(.+)&#39;/.exec(command)?.[1]?.replaceAll('&quot;', '"') ?? ''
    const registered = await app.call('POST', '/api/agents/register', { body })
    expect(registered.status).toBe(200)
    expect(registered.json.apiKey).toBeString()
    expect((await app.call('GET', '/api/community/agents/my-agent')).json.skills).toHaveLength(1)
  })
})

describe('pages and API clients at the same addresses', () => {
  test('behavior: /agents and /users are pages for browsers and link followers; JSON clients keep the 404 problem', async () => {
    const app = await testApp()
    const agentsPage = await page(app, '/agents?q=scout')
    expect(agentsPage.status).toBe(302)
    expect(agentsPage.headers.get('location')).toBe('/?q=scout')
    const users = await app.call('GET', '/users')
    expect(users.status).toBe(200)
    expect(users.headers.get('content-type')).toBe('text/html; charset=utf-8')
    for (const path of ['/agents', '/users']) {
      const json = await app.call('GET', path, { headers: { accept: 'application/json' } })
      expect(json.status).toBe(404)
      expect(json.json).toMatchObject({ status: 404, code: 'not_found' })
    }
  })

  test('behavior: the favicon is an SVG image, cached a day, at /favicon.ico and the address the pages name', async () => {
    const app = await testApp()
    for (const path of ['/favicon.ico', '/favicon.svg']) {
      const icon = await page(app, path)
      expect(icon.status).toBe(200)
      expect(icon.headers.get('content-type')).toBe('image/svg+xml')
      expect(icon.headers.get('cache-control')).toBe('public, max-age=86400')
      expect(icon.text).toStartWith('<svg xmlns="http://www.w3.org/2000/svg"')
    }
    expect((await page(app, '/')).text).toContain(
      '<link rel="icon" href="/favicon.svg" type="image/svg+xml">',
    )
  })
})

describe('the agent page', () => {
  test('behavior: delivered tasks read newest delivery first, each hash linked to the Base explorer', async () => {
    const app = await testApp('2026-06-01T12:00:00.000Z', { chain: paidChain })
    const first: Hex = `0x${'a1'.repeat(32)}`
    const second: Hex = `0x${'b2'.repeat(32)}`
    const { key, ids } = await deliveredPaidTasks(app, [first, second])
    // The first order is delivered last: it leads the history.
    for (const id of [ids[1], ids[0]]) {
      app.clock.advance(60_000)
      const done = await app.call('POST', `/api/agents/seller/tasks/${id}/complete`, {
        key,
        body: { result_url: 'https://results.example/r' },
      })
      expect(done.status).toBe(200)
    }
    const text = (await page(app, '/agents/seller')).text
    const linked = [...text.matchAll(/<a href="([^"]+)" rel="nofollow noopener" data-tx="(0x[0-9a-f]+)">/g)]
    expect(linked.map((match) => match[2])).toEqual([first, second])
    expect(linked.map((match) => match[1])).toEqual([
      `https://basescan.org/tx/${first}`,
      `https://basescan.org/tx/${second}`,
    ])
    expect(text).toContain('2 tasks delivered, newest delivery first.')
  })

  test('behavior: the explorer follows the chain id; a chain without a known explorer shows the hash alone', async () => {
    const hash: Hex = `0x${'c3'.repeat(32)}`
    for (const [chainId, link] of [
      [84532, `https://sepolia.basescan.org/tx/${hash}`],
      [1, `https://etherscan.io/tx/${hash}`],
      [10, null],
    ] as const) {
      const app = await testApp('2026-06-01T12:00:00.000Z', { chain: paidChain, chainConfig: { chainId } })
      const { key, ids } = await deliveredPaidTasks(app, [hash])
      await app.call('POST', `/api/agents/seller/tasks/${ids[0]}/complete`, {
        key,
        body: { result_url: 'https://results.example/r' },
      })
      const text = (await page(app, '/agents/seller')).text
      expect(text).toContain(`<code title="${hash}">${hash.slice(0, 10)}…</code>`)
      if (link) expect(text).toContain(`<a href="${link}"`)
      else expect(text).not.toContain('/tx/0x')
    }
  })

  test('behavior: "How to order" shows params built from the skill\'s input schema when it has one', () => {
    const skill = {
      name: 'Deep Research',
      slug: 'deep-research',
      description: null,
      type: 'free',
      price: null,
      currency: 'USDC',
      sla: null,
      sla_seconds: null,
      review_seconds: 0,
      reveal: 'on_delivery',
      url: null,
      input: {
        type: 'object',
        required: ['topic', 'depth'],
        properties: {
          topic: { type: 'string', examples: ['solar panels'] },
          depth: { type: 'integer', default: 2 },
        },
      },
    } as SkillView
    const agent = {
      name: 'scout',
      skills: [skill, { ...skill, slug: 'plain', input: undefined }],
      milestones: [],
      heartbeat: { status: 'live', lastSeen: null },
      walletAddress: null,
      owner: null,
      platform: 'other',
      createdAt: '2026-06-01T12:00:00.000Z',
      cardUrl: 'x',
      ratings: { count: 0, average: null, buyers: 0 },
      deliveries: { completed: 0, onTime: 0, late: 0, onTimeRatio: null, disputes: 0, refunds: 0 },
    } as unknown as Parameters<typeof agentPage>[0]
    const site = { baseUrl: TEST_BASE_URL, orderMailbox: null, now: new Date() }
    const text = String(agentPage(agent, { tasks: [], total: 0 }, site).body)
    expect(text).toContain(
      '{&quot;skill&quot;:&quot;deep-research&quot;,&quot;params&quot;:{&quot;topic&quot;:&quot;solar panels&quot;,&quot;depth&quot;:2}}',
    )
    expect(text).toContain('{&quot;skill&quot;:&quot;plain&quot;,&quot;params&quot;:{}}')
  })
})

describe('the user pages', () => {
  /** Users made the way people become users: pairing an agent with their wallet. */
  async function users(app: App, names: string[]) {
    const wallets = names.map((_, i) => privateKeyToAccount(`0x${(i + 1).toString(16).padStart(64, '7')}`))
    for (const [i, name] of names.entries()) {
      const { pairingCode } = await app.register(`${name}-bot`)
      const paired = await app.pair(name, pairingCode, wallets[i] as (typeof wallets)[0])
      expect(paired.status).toBe(200)
    }
    return wallets
  }

  test("behavior: the user index lists, searches and pages users through the API's own action", async () => {
    const app = await testApp()
    await users(app, ['ann', 'bob', 'cyd'])
    const index = await page(app, '/users')
    expect(count(index.text, 'data-user=')).toBe(3)
    expect(index.text).toContain('3 users.')
    const search = await page(app, '/users?q=bo')
    expect([...search.text.matchAll(/data-user="([^"]+)"/g)].map((match) => match[1])).toEqual(['bob'])
    const past = await page(app, '/users?offset=20')
    expect(past.text).toContain('No more results')
    expect(past.text).toContain('href="/users">← Back to the last page')
    expect((await page(app, '/users?limit=abc&offset=x')).status).toBe(400)
  })

  test('behavior: the showcase reads as content: labels, links, lists, numbers; never raw JSON', async () => {
    const app = await testApp()
    const [wallet] = await users(app, ['ann'])
    const showcase = {
      githubUrl: 'https://github.com/ann',
      languages: ['TypeScript', 'Rust'],
      open_source: { stars: 1200, maintained: true, note: '<b>bold</b>' },
    }
    const path = '/api/community/users/ann'
    const proof = await app.walletProof(wallet as NonNullable<typeof wallet>, 'PUT', path)
    const updated = await app.call('PUT', path, {
      body: { showcase },
      headers: { 'x-wallet-address': (wallet as NonNullable<typeof wallet>).address, ...proof },
    })
    expect(updated.status).toBe(200)
    const text = (await page(app, '/users/ann')).text
    expect(text).toContain('<dt>Github url</dt><dd><a href="https://github.com/ann" rel="nofollow noopener">')
    expect(text).toContain('<li>TypeScript</li><li>Rust</li>')
    expect(text).toContain('<dt>Stars</dt><dd>1,200</dd><dt>Maintained</dt><dd>yes</dd>')
    expect(text).toContain('&lt;b&gt;bold&lt;/b&gt;')
    expect(text).not.toContain('{&quot;')
  })
})

describe('the feed page', () => {
  test('behavior: heartbeats fold into one line; events read as sentences without field names', async () => {
    const app = await testApp()
    const keys = await agents(app, 3)
    for (const [i, key] of keys.entries())
      await app.call('POST', `/api/agents/agent-${i + 1}/heartbeat`, { key })
    await app.call('PUT', '/api/agents/agent-1', { key: keys[0], body: { walletAddress: SELLER, bio: 'Hi' } })
    const text = (await page(app, '/feed')).text
    expect(text).toContain('<summary>3 agents came online</summary>')
    expect(count(text, 'came online')).toBe(1)
    expect(text).toMatch(/agent-1<\/a> updated its (wallet and bio|bio and wallet)/)
    expect(text).not.toContain('walletAddress')
    const home = (await page(app, '/')).text
    expect(home).toContain('<summary>3 agents came online</summary>')
  })

  test('behavior: a full page links to older events, which continue where it stopped and do not update live', async () => {
    const app = await testApp()
    const [key] = await agents(app, 1)
    for (let i = 0; i < 110; i++)
      await app.call('PUT', '/api/agents/agent-1', { key, body: { bio: `Version ${i}` } })
    const newest = (await page(app, '/feed')).text
    const ids = (text: string) =>
      [...text.matchAll(/data-event-id="(\d+)"/g)].map((match) => Number(match[1]))
    expect(ids(newest)).toHaveLength(100)
    const older = /href="(\/feed\?before=(\d+))" rel="next">Older events/.exec(newest)
    expect(older?.[2]).toBe(String(Math.min(...ids(newest))))
    const next = (await page(app, older?.[1] ?? '')).text
    expect(ids(next)).toEqual([11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    expect(next).not.toContain('data-live-feed')
    expect(next).toContain('<a href="/feed">← Newest</a>')
    expect(next).not.toContain('Older events →')
    expect((await page(app, '/feed?before=soon')).status).toBe(400)
  })
})
