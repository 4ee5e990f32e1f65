import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import type { HDAccount } from 'viem/accounts'
import { signedRequestHeaders } from '../../packages/server/src/testing/http.ts'
import { type Anvil, paymentChain } from '../support/anvil.ts'
import { ARTIFACTS, launchChromium } from '../support/browser.ts'
import { signPayerProof } from '../support/payer.ts'
import { type MarketServer, startMarketServer } from '../support/process.ts'

/**
 * The main pages in a real Chromium at a desktop and a phone width, over a market with real data: agents, paid skills,
 * payments made on a local chain and delivered, an owner with a showcase. Each page is checked for sideways scrolling
 * and cut text, and its screenshot saved under tests/browser/artifacts/ (ignored by git).
 */
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-screens-'))
let server: MarketServer
let browser: Browser
let anvil: Anvil
let buyer: HDAccount
let sellerWallet: HDAccount
let owner: HDAccount
const keys: Record<string, string> = {}
const saved: string[] = []

/** The address the server publishes (and signatures name): its localhost form. */
const published = () => server.base.replace('127.0.0.1', 'localhost')

async function api(path: string, method = 'GET', body?: unknown, headers: Record<string, string> = {}) {
  const text = body === undefined ? undefined : JSON.stringify(body)
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: text,
  })
  // biome-ignore lint/suspicious/noExplicitAny: the seeding reads a few fields of many answers
  const json = (await response.json()) as any
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
  return json
}

const bearer = (name: string) => ({ authorization: `Bearer ${keys[name]}` })

async function register(name: string, bio: string, skills: unknown[], live: boolean) {
  keys[name] = (await api('/api/agents/register', 'POST', { name, bio, skills })).apiKey
  if (live) await api(`/api/agents/${name}/heartbeat`, 'POST', undefined, bearer(name))
}

/** An order of scout's Deep Research paid in USDC on the chain, confirmed, then delivered. */
async function paidAndDelivered() {
  const task = await api('/api/agents/scout/tasks', 'POST', {
    skill: 'deep-research',
    params: { topic: 'solar' },
  })
  const hash = await anvil.transferUsdc(buyer, sellerWallet.address, 1_500_000n)
  await anvil.mine(3)
  const signature = await signPayerProof(buyer, task.payment.payer_proof, hash)
  await api(`/api/agents/scout/tasks/${task.task_id}/verify-payment`, 'POST', {
    tx_hash: hash,
    payer_signature: signature,
  })
  await api(
    `/api/agents/scout/tasks/${task.task_id}/complete`,
    'POST',
    { result_url: 'https://results.example/1' },
    bearer('scout'),
  )
}

/** A request signed by the owner's wallet (EIP-712), as the pairing and profile edits ask. */
async function signed(method: string, path: string, body: unknown) {
  const text = JSON.stringify(body)
  const proof = await signedRequestHeaders(
    owner,
    { market: published(), method, path, body: text },
    new Date(),
  )
  return api(path, method, body, { 'x-wallet-address': owner.address, ...proof })
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  const chain = await paymentChain(['buyer', 'seller', 'owner'], { funded: ['buyer'] })
  ;({ anvil } = chain)
  ;({ buyer, seller: sellerWallet, owner } = chain.accounts)
  server = await startMarketServer({
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: anvil.rpcUrl,
  })
  browser = await launchChromium()
  const names = ['atlas', 'beacon', 'cartographer', 'drafter', 'echo-chamber', 'fact-checker', 'glossary']
  for (const name of names)
    await register(
      name,
      `Helps with ${name.replace('-', ' ')} work, quickly and with sources.`,
      ['Quick answer'],
      false,
    )
  for (let i = 0; i < 16; i++) await register(`helper-${i + 1}`, 'A general helper.', ['Ping'], false)
  // A burst of agents coming online, as after a restart: one line in the feed.
  for (const name of names) await api(`/api/agents/${name}/heartbeat`, 'POST', undefined, bearer(name))
  await register(
    'scout',
    'Finds sources and writes research briefs with citations, in English or French.',
    [
      {
        name: 'Deep Research',
        type: 'purchasable',
        price: 1.5,
        sla: '24 hours',
        description: 'A cited brief of 2-5 pages.',
      },
      {
        name: 'GDPR Data Map',
        type: 'purchasable',
        price: 4,
        sla: '48 hours',
        description: 'Where personal data flows.',
      },
      { name: 'Ping', description: 'Answers pong: a free liveness check.' },
    ],
    true,
  )
  await api('/api/agents/scout', 'PUT', { walletAddress: sellerWallet.address }, bearer('scout'))
  await api(
    '/api/agents/scout/milestones',
    'POST',
    { date: '2026-05-01', title: 'First 100 briefs', proof: 'https://example.com/p' },
    bearer('scout'),
  )
  await paidAndDelivered()
  await paidAndDelivered()
  const free = await api('/api/agents/scout/tasks', 'POST', { skill: 'ping' })
  await api(
    `/api/agents/scout/tasks/${free.task_id}/complete`,
    'POST',
    { result_url: 'https://results.example/pong' },
    bearer('scout'),
  )
  const { pairingCode } = await api('/api/agents/scout/pairing-code', 'POST', undefined, bearer('scout'))
  await signed('POST', '/api/community/users/ann/pair-agent', { pairingCode })
  await signed('PUT', '/api/community/users/ann', {
    bio: 'Runs a small research studio; owns scout.',
    showcase: {
      website: 'https://ann.example',
      githubUrl: 'https://github.com/ann-example',
      languages: ['English', 'French'],
      open_source: { projects: 12, stars: 1200, maintained: true },
    },
  })
}, 300_000)

afterAll(async () => {
  await browser?.close()
  server?.stop()
  anvil?.stop()
  rmSync(folder, { recursive: true, force: true })
  if (saved.length) console.log(`screenshots:\n${saved.map((path) => `  ${path}`).join('\n')}`)
})

/**
 * What a reader would see cut: elements reaching past the screen's right edge (outside a scroll box of their own),
 * text clipped by its box, and input placeholders wider than their field.
 */
function cutText(page: Page) {
  return page.evaluate(() => {
    const problems: string[] = []
    const width = window.innerWidth
    const describe = (element: Element) =>
      `${element.tagName.toLowerCase()}${element.className ? `.${String(element.className).split(' ')[0]}` : ''} "${(element.textContent ?? '').trim().slice(0, 40)}"`
    const scrollsItself = (element: Element) => element.closest('.table-wrap, pre') !== null
    for (const element of document.querySelectorAll('body *')) {
      const box = element.getBoundingClientRect()
      if (box.width === 0 || box.height === 0 || scrollsItself(element)) continue
      if (box.right > width + 0.5) problems.push(`past the right edge: ${describe(element)}`)
      const style = getComputedStyle(element)
      const clips = ['hidden', 'clip'].includes(style.overflowX) || style.textOverflow === 'ellipsis'
      if (clips && element.scrollWidth > element.clientWidth + 1)
        problems.push(`clipped: ${describe(element)}`)
    }
    const canvas = document.createElement('canvas').getContext('2d')
    for (const input of document.querySelectorAll<HTMLInputElement>('input[placeholder]')) {
      if (!canvas) break
      const style = getComputedStyle(input)
      canvas.font = `${style.fontSize} ${style.fontFamily}`
      const room =
        input.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight)
      // A search field keeps room for its clear button on the right.
      const needed = canvas.measureText(input.placeholder).width + (input.type === 'search' ? 16 : 0)
      if (needed > room)
        problems.push(`placeholder cut: "${input.placeholder}" needs ${needed} px, has ${room}`)
    }
    return problems
  })
}

const PAGES = [
  ['home', '/'],
  ['agent', '/agents/scout'],
  ['feed', '/feed'],
  ['user', '/users/ann'],
  ['users', '/users'],
  ['empty-search', '/?q=no-such-agent-anywhere'],
] as const

describe('screenshots of the main pages', () => {
  for (const [width, height, label] of [
    [1280, 900, 'desktop'],
    [390, 844, 'phone'],
  ] as const) {
    test(`behavior: at ${width} px (${label}) every main page fits the screen and cuts no text`, async () => {
      const context = await browser.newContext({ viewport: { width, height } })
      const page = await context.newPage()
      for (const [name, path] of PAGES) {
        const answer = await page.goto(`${server.base}${path}`)
        expect(answer?.status(), path).toBe(200)
        await page.waitForLoadState('load')
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
        expect(overflow, `${path} scrolls sideways at ${width} px`).toBeLessThanOrEqual(0)
        expect(await cutText(page), `${path} at ${width} px`).toEqual([])
        const file = join(ARTIFACTS, `${name}-${width}.png`)
        await page.screenshot({ path: file, fullPage: true })
        saved.push(file)
      }
      await context.close()
    })
  }

  test('behavior: what the screenshots show is there: paid skills, linked payments, folded heartbeats, a readable showcase', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } })
    await page.goto(`${server.base}/agents/scout`)
    expect(await page.locator('li[data-skill] .badge.paid').allInnerTexts()).toEqual(['1.5 USDC', '4 USDC'])
    const payments = page.locator('table a[data-tx]')
    expect(await payments.count()).toBe(2)
    expect(await payments.first().getAttribute('href')).toMatch(
      /^https:\/\/basescan\.org\/tx\/0x[0-9a-f]{64}$/,
    )
    // On a phone the wallet is shortened whole, never broken mid-word; its full value is in the title.
    const wallet = page.locator('.copyable code.short')
    expect(await wallet.isVisible()).toBe(true)
    expect(await wallet.getAttribute('title')).toBe(sellerWallet.address)
    expect(await wallet.innerText()).toBe(
      `${sellerWallet.address.slice(0, 6)}…${sellerWallet.address.slice(-4)}`,
    )
    await page.goto(`${server.base}/feed`)
    expect(await page.locator('ol.feed summary', { hasText: '7 agents came online' }).count()).toBe(1)
    await page.goto(`${server.base}/users/ann`)
    expect(await page.locator('.showcase dt').allInnerTexts()).toContain('Github url')
    expect(await page.locator('.showcase').innerText()).not.toContain('{')
    await page.goto(`${server.base}/?q=no-such-agent-anywhere`)
    expect(await page.locator('main').innerText()).toContain('No agent matches this search.')
    expect((await page.locator('main').innerText()).split('No agent matches').length).toBe(2)
    await page.close()
  })

  test('behavior: the seller command copies with one click (the script the CSP allows), and registers as pasted', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.base })
    const page = await context.newPage()
    await page.goto(`${server.base}/`)
    const button = page.locator('[data-seller-cta] button.copy')
    expect(await button.isVisible()).toBe(true)
    await button.click()
    await page.waitForFunction(
      () => document.querySelector('[data-seller-cta] button.copy')?.textContent === 'Copied',
    )
    const copied = await page.evaluate(() => navigator.clipboard.readText())
    expect(copied).toBe(await page.locator('[data-seller-cta] pre code').innerText())
    const body = /-d '(.+)'$/.exec(copied)?.[1] ?? ''
    const url = /curl -X POST (\S+)/.exec(copied)?.[1] ?? ''
    const answer = await fetch(url.replace('//localhost:', '//127.0.0.1:'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    expect(answer.status).toBe(200)
    await context.close()
  })
})
