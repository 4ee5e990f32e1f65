import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { ARTIFACTS, launchChromium } from '../support/browser.ts'
import { type MarketServer, runToEnd, startMarketServer } from '../support/process.ts'

const root = new URL('../..', import.meta.url).pathname
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-demo-'))
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DATABASE_URL: `file:${join(folder, 'market.db')}` }
let server: MarketServer
let browser: Browser
let seedOutput = ''

// A wide bound that only ends a hang: seeding, a server and Chromium took over 30 s beside a second CI run.
setDefaultTimeout(300_000)

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  const seeded = await runToEnd(['bun', 'run', 'demo'], { cwd: root, env })
  seedOutput = seeded.stdout + seeded.stderr
  if (seeded.exitCode !== 0) throw new Error(`bun run demo failed: ${seedOutput}`)
  server = await startMarketServer({ DATABASE_URL: env.DATABASE_URL })
  browser = await launchChromium()
}, 300_000)

afterAll(async () => {
  await browser?.close()
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('the demo marketplace in Chromium', () => {
  test('behavior: `bun run demo` seeds a living market, and refuses to seed it twice', async () => {
    expect(seedOutput).toContain('70 purchasable skills')
    const again = await runToEnd(['bun', 'run', 'demo'], { cwd: root, env })
    expect(again.exitCode).toBe(1)
    expect(again.stderr).toContain('already has agents')
  })

  test('behavior: / shows a page of agents with badges and prices, pages on, and an agent page is complete', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const foreign: string[] = []
    page.on('request', (request) => {
      if (!request.url().startsWith(server.base)) foreign.push(request.url())
    })
    await page.goto(`${server.base}/`)
    expect(await page.locator('li[data-agent]').count()).toBe(20)
    const badges = async () => page.locator('li[data-agent] h3 .badge').allTextContents()
    const statuses = new Set(await badges())
    expect(await page.locator('li[data-agent] >> text=/from \\d/').count()).toBeGreaterThan(0)
    expect(await page.locator('ol.feed li').count()).toBeGreaterThan(5)
    await page.screenshot({ path: join(ARTIFACTS, 'demo-home.png'), fullPage: true })
    await page.click('a[rel="next"]')
    await page.waitForURL(/offset=20/)
    expect(await page.locator('li[data-agent]').count()).toBe(16)
    for (const status of await badges()) statuses.add(status)
    expect([...statuses].sort()).toEqual(['idle', 'live', 'off'])

    await page.goto(`${server.base}/`)
    const richest = page.locator('li[data-agent]').filter({ hasText: 'owned by' }).first()
    await richest.locator('h3 a').click()
    await page.waitForURL(/\/agents\//)
    expect(await page.locator('li[data-skill]').count()).toBeGreaterThan(0)
    expect(await page.locator('h2', { hasText: 'Milestones' }).count()).toBe(1)
    expect(await page.locator('dl.meta a[href^="/users/"]').count()).toBe(1)
    await page.locator('li[data-skill] summary').first().click()
    await page.screenshot({ path: join(ARTIFACTS, 'demo-agent.png'), fullPage: true })
    await page.locator('dl.meta a[href^="/users/"]').click()
    await page.waitForURL(/\/users\//)
    expect(await page.locator('li[data-agent]').count()).toBeGreaterThan(0)
    await page.screenshot({ path: join(ARTIFACTS, 'demo-user.png'), fullPage: true })
    expect(foreign).toEqual([])
    await page.close()
  })
})
