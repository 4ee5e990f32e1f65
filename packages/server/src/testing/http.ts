import {
  type ChainReader,
  defaultConfig,
  type MarketConfig,
  Marketplace,
  type MppSettings,
  manualClock,
  type Store,
  walletProofMessage,
  walletProofTypedData,
  type X402Settings,
} from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import type { LocalAccount } from 'viem/accounts'
import { createApp } from '../app.ts'
import type { Logger } from '../log.ts'
import type { RateLimitSettings } from '../plugins/rateLimits.ts'

/** The base URL test apps publish. */
export const TEST_BASE_URL = 'http://localhost:3000'

/** A wallet a test holds the key of. */
export type TestWallet = Pick<LocalAccount, 'address' | 'signMessage' | 'signTypedData'>

/**
 * Headers of the current wallet proof (X-Wallet-Scheme: eip712): `wallet` signs the request's typed data, its body
 * (the exact JSON text sent) included, for the marketplace at `market`.
 */
export async function signedRequestHeaders(
  wallet: TestWallet,
  request: { market: string; method: string; path: string; body?: string },
  now: Date,
) {
  const timestamp = BigInt(now.getTime())
  const body = new TextEncoder().encode(request.body ?? '')
  const signature = await wallet.signTypedData(walletProofTypedData({ ...request, body }, timestamp))
  return {
    'x-wallet-signature': signature,
    'x-wallet-timestamp': String(timestamp),
    'x-wallet-scheme': 'eip712',
  }
}

/** Headers of the deprecated wallet proof (EIP-191 text, unix seconds), as clients before EIP-712 send them. */
export async function walletProofHeaders(wallet: TestWallet, method: string, path: string, now: Date) {
  const timestamp = String(Math.floor(now.getTime() / 1000))
  const signature = await wallet.signMessage({ message: walletProofMessage(method, path, timestamp) })
  return { 'x-wallet-signature': signature, 'x-wallet-timestamp': timestamp }
}

/** What a test may swap: the payment chain and its settings, or the database (default: a fresh `:memory:`). */
export type TestAppOptions = {
  chain?: ChainReader
  chainConfig?: Partial<MarketConfig['chain']>
  databaseUrl?: string
  /** A store the test opened (another database, or PostgreSQL); it wins over `databaseUrl`. */
  store?: Store
  mpp?: MppSettings
  /** x402 payments on the payment chain. */
  x402?: X402Settings
  /** Browser origins allowed to write (CORS_ORIGINS). */
  corsOrigins?: string[]
  /** Rate limits (off unless given). */
  rateLimits?: RateLimitSettings
  /** The request log and fault log (none unless given). */
  logger?: Logger
  /** Webhook endpoints may be private addresses (WEBHOOK_ALLOW_PRIVATE). */
  webhookAllowPrivate?: boolean
  /** Told after each in-process write of feed events (what serve.ts wakes its webhook sender with). */
  onEventsWritten?: () => void
}

/** An in-process app over a fresh libSQL :memory: database (or the test's store), with a clock the test moves. */
export async function testApp(start = '2026-06-01T12:00:00.000Z', options: TestAppOptions = {}) {
  const clock = manualClock(start)
  const store: Store = options.store ?? libsqlStore(await openDatabase(options.databaseUrl ?? ':memory:'))
  const base = defaultConfig(TEST_BASE_URL)
  const config = {
    ...base,
    chain: { ...base.chain, ...options.chainConfig },
    webhookAllowPrivate: options.webhookAllowPrivate ?? false,
  }
  const market = Marketplace.create({
    store,
    clock,
    config,
    chain: options.chain,
    mpp: options.mpp,
    x402: options.x402,
    onEventsWritten: options.onEventsWritten,
  })
  const app = createApp({
    market,
    baseUrl: TEST_BASE_URL,
    corsOrigins: options.corsOrigins,
    rateLimits: options.rateLimits ?? null,
    logger: options.logger ?? null,
  })

  /** Calls the app as an HTTP client would; objects are sent as JSON. */
  async function call(
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string>; key?: string } = {},
  ) {
    const headers = new Headers(options.headers)
    if (options.key) headers.set('authorization', `Bearer ${options.key}`)
    let body: BodyInit | undefined
    if (options.body !== undefined) {
      const raw = typeof options.body === 'string' || options.body instanceof Uint8Array
      body = raw ? (options.body as BodyInit) : JSON.stringify(options.body)
      if (!headers.has('content-type')) headers.set('content-type', 'application/json')
    }
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    // biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
    let json: any = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {}
    return { status: response.status, headers: response.headers, text, json }
  }

  /** Registers an agent and returns its name and key. */
  async function register(name: string, extra: Record<string, unknown> = {}) {
    const response = await call('POST', '/api/agents/register', { body: { name, ...extra } })
    if (response.status !== 200) throw new Error(`register ${name}: ${response.status} ${response.text}`)
    return { name, key: response.json.apiKey as string, pairingCode: response.json.pairingCode as string }
  }

  /**
   * The deprecated EIP-191 wallet proof headers for `method path` at the app's clock, or `skewSeconds` away from it
   * (taken for profile edits and the invite code only). The clock first moves a second on, as a real client's would
   * between two signatures: each proof is accepted once.
   */
  function walletProof(wallet: TestWallet, method: string, path: string, skewSeconds = 0) {
    clock.advance(1000)
    return walletProofHeaders(wallet, method, path, new Date(clock.now().getTime() + skewSeconds * 1000))
  }

  /**
   * The EIP-712 wallet proof headers (X-Wallet-Scheme: eip712) of `method path` with the exact `body` text, at the
   * app's clock a second on (or `skewSeconds` away from it): the proof every operation takes.
   */
  function signedProof(wallet: TestWallet, method: string, path: string, body = '', skewSeconds = 0) {
    clock.advance(1000)
    const at = new Date(clock.now().getTime() + skewSeconds * 1000)
    return signedRequestHeaders(wallet, { market: TEST_BASE_URL, method, path, body }, at)
  }

  /** Pairs the agent holding `pairingCode` to `username` as `wallet`, signed (the answer, whatever it is). */
  async function pair(username: string, pairingCode: string, wallet: TestWallet) {
    const path = `/api/community/users/${username}/pair-agent`
    const body = JSON.stringify({ pairingCode })
    const proof = await signedProof(wallet, 'POST', path, body)
    return call('POST', path, { body, headers: { 'x-wallet-address': wallet.address, ...proof } })
  }

  return { app, store, clock, market, call, register, walletProof, signedProof, pair }
}

/** The shape every error body has. */
export function expectProblemShape(
  // biome-ignore lint/suspicious/noExplicitAny: the body is checked field by field below
  response: { status: number; headers: Headers; json: any },
  status: number,
  code?: string,
) {
  const problems: string[] = []
  if (response.status !== status) problems.push(`status ${response.status} != ${status}`)
  if (response.headers.get('content-type') !== 'application/problem+json') problems.push('not problem+json')
  const body = response.json ?? {}
  for (const field of ['type', 'title', 'status', 'detail', 'instance', 'code'])
    if (!(field in body)) problems.push(`no ${field}`)
  if (code && body.code !== code) problems.push(`code ${body.code} != ${code}`)
  if (typeof body.type === 'string' && !body.type.endsWith(`/problems/${body.code}`))
    problems.push('type does not end in code')
  if (problems.length) throw new Error(`${problems.join(', ')}: ${JSON.stringify(body)}`)
}
