import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { ARTIFACTS, launchChromium } from '../support/browser.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const XSS = '<script>alert(1)</script><img src=x onerror=alert(2)>'
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-browser-'))
let server: MarketServer
let browser: Browser
const keys: Record<string, string> = {}

async function api(path: string, method = 'GET', body?: unknown, agent?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (agent) headers.authorization = `Bearer ${keys[agent]}`
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

async function register(name: string, bio: string, skills: unknown[]) {
  const { json } = await api('/api/agents/register', 'POST', { name, bio, skills })
  keys[name] = String(json.apiKey)
  await api(`/api/agents/${name}`, 'PUT', { walletAddress: WALLET }, name)
  await api(`/api/agents/${name}/heartbeat`, 'POST', undefined, name)
}

/** A new page that fails the test on any request leaving the server, and on any dialog (a script that ran). */
async function openPage(width = 1280, height = 900) {
  const page = await browser.newPage({ viewport: { width, height } })
  const foreign: string[] = []
  const dialogs: string[] = []
  page.on('request', (request) => {
    if (!request.url().startsWith(server.base)) foreign.push(request.url())
  })
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    dialog.dismiss().catch(() => {})
  })
  return { page, foreign, dialogs }
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, name), fullPage: true })

// A wide bound that only ends a hang: seeding, a server and Chromium took over 30 s beside a second CI run.
setDefaultTimeout(300_000)

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  server = await startMarketServer({ DATABASE_URL: `file:${join(folder, 'market.db')}` })
  browser = await launchChromium()
  await register('scout', 'Finds sources and writes research briefs.', [
    {
      name: 'Deep Research',
      type: 'purchasable',
      price: 1.5,
      sla: '24 hours',
      description: 'A cited brief.',
    },
    'Ping',
  ])
  await register('mallory', XSS, ['Echo'])
  await api(
    '/api/agents/scout/milestones',
    'POST',
    { date: '2026-10-01', title: 'First 100 briefs', proof: 'https://example.com/p' },
    'scout',
  )
}, 300_000)

afterAll(async () => {
  await browser?.close()
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('pages in Chromium', () => {
  test('behavior: / lists the agents; a search narrows them; a click opens the agent page', async () => {
    const { page, foreign } = await openPage()
    await page.goto(`${server.base}/`)
    expect(await page.title()).toContain('agentmarket')
    expect(await page.locator('meta[name="description"]').getAttribute('content')).toContain('marketplace')
    expect(await page.locator('li[data-agent]').count()).toBe(2)
    await shot(page, 'home.png')
    await page.fill('input[name="q"]', 'research')
    await page.click('button[type="submit"]')
    await page.waitForURL(/\?q=research/)
    expect(await page.locator('li[data-agent]').count()).toBe(1)
    const card = page.locator('li[data-agent="scout"]')
    expect(await card.locator('.badge').innerText()).toBe('live')
    expect(await card.innerText()).toContain('from 1.5 USDC')
    await card.locator('a', { hasText: 'scout' }).click()
    await page.waitForURL(/\/agents\/scout$/)
    expect(await page.locator('h1').innerText()).toContain('scout')
    expect(await page.locator('.badge.verified').count()).toBe(1)
    await shot(page, 'agent.png')
    expect(foreign).toEqual([])
    await page.close()
  })

  test("behavior: a skill's order instructions, followed as written, create a task", async () => {
    const { page } = await openPage()
    await page.goto(`${server.base}/agents/scout`)
    const skill = page.locator('li[data-skill="deep-research"]')
    await skill.locator('summary').click()
    const curl = await skill.locator('pre code').innerText()
    const url = /curl -X POST (\S+)/.exec(curl)?.[1] ?? ''
    const body = /-d '(.+)'/.exec(curl)?.[1] ?? ''
    expect(url).toBe(`${server.base.replace('127.0.0.1', 'localhost')}/api/agents/scout/tasks`)
    const response = await fetch(url.replace('localhost', '127.0.0.1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    expect(response.status).toBe(201)
    expect(await response.json()).toMatchObject({ status: 'pending_payment', skill: 'Deep Research' })
    await page.close()
  })

  test('behavior: a new event appears on /feed without a reload', async () => {
    const { page } = await openPage()
    await page.goto(`${server.base}/feed`)
    await page.waitForFunction(() =>
      document.querySelector('[data-live-status]')?.textContent?.startsWith('Live'),
    )
    const before = await page.locator('ol.feed li').count()
    await register('newcomer', 'Just arrived.', ['Hello'])
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('ol.feed li')].some((item) =>
          item.textContent?.includes('newcomer joined the marketplace'),
        ),
      undefined,
      { timeout: 10_000 },
    )
    expect(await page.locator('ol.feed li').first().innerText()).toContain('newcomer')
    expect(await page.locator('ol.feed li').count()).toBeGreaterThan(before)
    await shot(page, 'feed.png')
    await page.close()
  })

  test('error: user text never runs as script, on the list or the agent page', async () => {
    const { page, dialogs } = await openPage()
    for (const path of ['/', '/agents/mallory', '/feed']) {
      await page.goto(`${server.base}${path}`)
      await page.waitForLoadState('load')
    }
    expect(await page.evaluate(() => document.querySelectorAll('main script, main img').length)).toBe(0)
    await page.goto(`${server.base}/agents/mallory`)
    expect(await page.locator('p.bio').innerText()).toBe(XSS)
    await Bun.sleep(200)
    expect(dialogs).toEqual([])
    await page.close()
  })

  test('behavior: a phone-sized screen needs no sideways scrolling; unknown agents get a 404 page', async () => {
    const { page } = await openPage(390, 844)
    for (const path of ['/', '/agents/scout', '/feed']) {
      await page.goto(`${server.base}${path}`)
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      expect(overflow, path).toBeLessThanOrEqual(0)
    }
    await shot(page, 'agent-phone.png')
    const missing = await page.goto(`${server.base}/agents/nobody-here`)
    expect(missing?.status()).toBe(404)
    expect(await page.locator('h1').innerText()).toContain('No agent named')
    await page.close()
  })

  test('behavior: a search by skill description finds its seller; the filters and sorts of the API apply', async () => {
    const { page } = await openPage()
    await page.goto(`${server.base}/`)
    await page.fill('input[name="q"]', 'cited brief')
    await page.click('button[type="submit"]')
    await page.waitForURL(/\?q=cited/)
    expect(
      await page.locator('li[data-agent]').evaluateAll((items) => items.map((item) => item.dataset.agent)),
    ).toEqual(['scout'])
    for (const [query, agents] of [
      ['type=paid', ['scout']],
      ['type=free&sort=new', ['mallory', 'scout']],
      ['max_price=1.5&status=live', ['scout']],
      ['max_price=1.49', []],
    ] as const) {
      await page.goto(`${server.base}/?${query}`)
      const shown = await page
        .locator('li[data-agent]')
        .evaluateAll((items) => items.map((item) => item.dataset.agent))
      // Other tests add agents of their own (a newcomer); these two are this test's.
      expect(
        shown.filter((name) => name === 'scout' || name === 'mallory'),
        query,
      ).toEqual([...agents])
      const api = await (await fetch(`${server.base}/api/community/agents?${query}`)).json()
      expect(
        api.agents.map((agent: { name: string }) => agent.name),
        query,
      ).toEqual(shown)
    }
    await page.close()
  })
})
