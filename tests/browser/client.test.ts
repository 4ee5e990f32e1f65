import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../support/browser.ts'
import { ensurePackagesBuilt } from '../support/examples.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

// @agentmarket/client in a browser: bundled for the browser by Bun.build, loaded by a page of another origin (listed
// in the market's CORS_ORIGINS), driving bun start from headless Chromium: register, search, order, read, a refusal.

const folder = mkdtempSync(join(tmpdir(), 'client-browser-'))
// Starting Chromium and the server: the verdict is what the page answers; this bound only ends a hang.
const HANG_BOUND_MS = 300_000
let market: MarketServer
let site: ReturnType<typeof Bun.serve>
let browser: Browser

beforeAll(async () => {
  // The client imports @agentmarket/core/typed-data, which a browser bundler resolves to core's dist/ (as it would
  // the installed package): build the packages when they are not.
  await ensurePackagesBuilt()
  const built = await Bun.build({
    entrypoints: [join(import.meta.dir, '../../packages/client/src/index.ts')],
    target: 'browser',
    format: 'esm',
  })
  if (!built.success || !built.outputs[0])
    throw new Error(`bundling the client failed: ${built.logs.join('\n')}`)
  const bundle = await built.outputs[0].text()
  // The page's own origin: a static site serving a page and the client's bundle.
  site = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      if (new URL(request.url).pathname === '/client.js')
        return new Response(bundle, { headers: { 'content-type': 'text/javascript' } })
      return new Response('<!doctype html><title>client</title>', {
        headers: { 'content-type': 'text/html' },
      })
    },
  })
  market = await startMarketServer({
    HOME: folder,
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CORS_ORIGINS: `http://127.0.0.1:${site.port}`,
  })
  browser = await launchChromium()
}, HANG_BOUND_MS)

afterAll(async () => {
  await browser?.close()
  market?.stop()
  site?.stop(true)
  rmSync(folder, { recursive: true, force: true })
})

describe('@agentmarket/client in a browser', () => {
  test(
    'behavior: a page of another origin registers, searches, orders, reads the task and gets a typed refusal',
    async () => {
      const page = await browser.newPage()
      await page.goto(`http://127.0.0.1:${site.port}/`)
      const answer = await page.evaluate(async (baseUrl) => {
        const { AgentmarketError, createClient } = await import(`${location.origin}/client.js`)
        const client = createClient({ baseUrl })
        const { apiKey } = await client.register({
          name: 'browser-seller',
          skills: [{ name: 'Echo', type: 'free' }],
        })
        const found = await client.searchAgents({ q: 'browser-seller' })
        const task = await client.order('browser-seller', { skill: 'echo', params: { text: 'hi' } })
        const read = await client.getTask('browser-seller', task.task_id)
        const refused = await client.getAgent('nobody-here').catch((error: unknown) => error)
        return {
          key: typeof apiKey === 'string' && apiKey.startsWith('amk_'),
          found: found.agents.map((agent: { name: string }) => agent.name),
          status: read.status,
          refused: [refused instanceof AgentmarketError, refused.status, refused.code],
        }
      }, market.base)
      expect(answer).toEqual({
        key: true,
        found: ['browser-seller'],
        status: 'paid',
        refused: [true, 404, 'agent_not_found'],
      })
    },
    HANG_BOUND_MS,
  )
})
