import {
  DEFAULT_IDEMPOTENCY_QUOTA,
  defaultConfig,
  type IdempotencyQuota,
  type MarketConfig,
  UNPAID_TASK_TTL_MS,
  withoutTrailing,
} from '@agentmarket/core'
import {
  DEFAULT_RATE_POLICIES,
  DEFAULT_STREAM_LIMITS,
  type RateClass,
  type RatePolicy,
  type StreamLimits,
} from '@agentmarket/core/routes'
import * as v from 'valibot'
import { isAddress } from 'viem'
import { DEFAULT_SMTP_CONNECTION_LIMITS, type SmtpConnectionLimits } from './mail/connectionSlots.ts'

/** Everything the server reads from its environment (CONTRACT.md), validated. */
export type Settings = {
  port: number
  host: string
  /** Seconds a connection may stay silent, or a request take to arrive, before it is closed. */
  idleTimeoutSeconds: number
  /** Share PORT with other processes listening on it (REUSE_PORT=on); off: a port in use stops the start. */
  reusePort: boolean
  baseUrl: string
  databaseUrl: string
  databaseAuthToken: string | undefined
  /** PostgreSQL only: connections in this node's pool. */
  databasePoolSize: number
  /** libSQL files only: seconds a start waits on a database another process holds locked, then exits 1. */
  databaseLockWaitSeconds: number
  /** PostgreSQL only: TLS to the database; undefined: as the URL's `sslmode` says. */
  databaseTls: 'off' | 'require' | 'verify-full' | undefined
  /** PostgreSQL only: how long each kind of work waits for the database (milliseconds). */
  databaseTimeouts: DatabaseTimeouts
  /** How long a health or readiness check waits for the database before it says it is down (milliseconds). */
  healthProbeTimeoutMs: number
  /** How long a process holds the outbox entries and payment re-checks it claimed before another may take them over. */
  claimLeaseSeconds: number
  chainRpcUrl: string
  chainId: number
  /** Milliseconds of chain calls one request may wait in all (CHAIN_REQUEST_BUDGET_MS). */
  chainRequestBudgetMs: number
  usdcContract: `0x${string}`
  escrowContract: `0x${string}` | null
  jobEscrowContract: `0x${string}` | null
  jobEscrowStartBlock: number | null
  minConfirmations: number
  unpaidTaskTtlSeconds: number
  mppSecretKey: string | undefined
  mppRealm: string
  tempoRpcUrl: string
  mppCurrency: `0x${string}`
  /** The key that submits x402 settlements on the payment chain (it pays their gas); unset: no x402. */
  x402SettlerKey: `0x${string}` | undefined
  /** Seconds an x402 authorization stays valid (maxTimeoutSeconds of the offers). */
  x402MaxTimeoutSeconds: number
  /** The private JWK (P-256) A2A cards are signed with; unset: one made once and kept in the database. */
  a2aCardSigningKey: Record<string, string> | undefined
  pairingPrefix: string
  /** HMAC key of pairing codes; unset: one made once and kept in the database. */
  pairingSecret: string | undefined
  pairingCodeTtlSeconds: number
  /** Whether the deprecated EIP-191 wallet proof is still accepted (`accept`) or refused (`refuse`). */
  walletProofLegacy: boolean
  /** Webhook endpoints may be private, loopback or link-local addresses (WEBHOOK_ALLOW_PRIVATE). */
  webhookAllowPrivate: boolean
  orderMailbox: string
  smtpInboundPort: number | null
  smtpOutboundUrl: string | null
  /** What the order mailbox does with mail its sender's domain does not authenticate. */
  mailAuth: 'enforce' | 'report' | 'off'
  /** DNS servers (`ip` or `ip:port`) for those checks; empty: the system's. */
  mailDnsServers: string[]
  /** SMTP connections per client address and in all, and how long a session may last. */
  smtpConnections: SmtpConnectionLimits
  /** Live feed streams open at once per client address, and in this process. */
  feedStreams: StreamLimits
  /** Answers kept for Idempotency-Key replays per client address and per API key (count, stored bytes). */
  idempotencyQuota: IdempotencyQuota
  rateLimits: boolean
  /** Limits that replace the defaults of their kind (DEFAULT_RATE_POLICIES). */
  ratePolicies: Partial<Record<RateClass, RatePolicy>>
  /** How many proxies in front of the server append to X-Forwarded-For; 0: the header is ignored. */
  trustProxy: number
  /** Browser origins allowed to write (CORS preflights granted); empty: writes from browsers stay closed. */
  corsOrigins: string[]
  /** `info`: a JSON line per request; `warn`: only failures; `off`: none. */
  logLevel: 'info' | 'warn' | 'off'
}

/** PostgreSQL's timeouts by kind of work, in milliseconds (README's settings table). */
export type DatabaseTimeouts = {
  /** Opening a connection. */
  connectMs: number
  /** A request's reads and writes; past it the request answers 503. */
  requestMs: number
  /** Searches (the agents' and users' lists, paid offers). */
  searchMs: number
  /** The background passes (payment re-checks, outbox, webhooks, expiry). */
  backgroundMs: number
  /** Each statement of a migration (at start and `agentmarket migrate`). */
  migrationMs: number
  /** Each step of `agentmarket copy` (a count, a page of rows read or written); past it the copy exits 1. */
  copyMs: number
}

/** A malformed environment variable; `message` is the one line the server prints before exiting 1. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError'
}

type Env = Record<string, string | undefined>

// Variables whose value is a secret: a refusal names the variable, never its value (the line lands in logs).
const SECRET_VARIABLES = new Set([
  'DATABASE_AUTH_TOKEN',
  'MPP_SECRET_KEY',
  'PAIRING_SECRET',
  'X402_SETTLER_KEY',
  'A2A_CARD_SIGNING_KEY',
])
// Variables holding a URL that may carry a password or a key (user, path, query): only its scheme and host are shown.
const URL_VARIABLES = new Set(['DATABASE_URL', 'CHAIN_RPC_URL', 'TEMPO_RPC_URL', 'SMTP_OUTBOUND_URL'])

/** The `name=value` part of a refusal: the value as given, cut to its scheme and host, or left out if secret. */
function shownSetting(name: string, raw: string): string {
  if (SECRET_VARIABLES.has(name)) return name
  if (!URL_VARIABLES.has(name)) return `${name}=${JSON.stringify(raw)}`
  if (!URL.canParse(raw)) return name
  const url = new URL(raw)
  const shown = `${url.protocol}//${url.host}`
  return `${name}=${JSON.stringify(raw.length > shown.length ? `${shown}/…` : shown)}`
}

function read<T>(env: Env, name: string, schema: v.GenericSchema<string, T>, fallback?: string): T {
  const raw = env[name] === undefined || env[name] === '' ? fallback : env[name]
  const result = v.safeParse(schema, raw)
  if (result.success) return result.output
  throw new SettingsError(`${shownSetting(name, raw ?? '')} is invalid: ${result.issues[0]?.message}`)
}

const urlWith = (protocols: string[], label: string) =>
  v.pipe(
    v.string(),
    v.check(
      (text) => URL.canParse(text) && protocols.includes(new URL(text).protocol),
      `must be a ${label} URL`,
    ),
  )
const port = v.pipe(
  v.string(),
  v.regex(/^\d{1,5}$/, 'must be a port number'),
  v.transform(Number),
  v.maxValue(65535, 'must be a port number'),
)
const positive = v.pipe(
  v.string(),
  v.regex(/^[1-9]\d{0,8}$/, 'must be a positive whole number'),
  v.transform(Number),
)
// Bun.serve takes at most 255; 0 (no timeout) would let stalled clients hold connections forever.
const idleSeconds = v.pipe(
  v.string(),
  v.regex(/^[1-9]\d{0,2}$/, 'must be a whole number of seconds from 1 to 255'),
  v.transform(Number),
  v.maxValue(255, 'must be a whole number of seconds from 1 to 255'),
)
const address = v.pipe(
  v.string(),
  v.check((text) => isAddress(text), 'must be a 20-byte hex address'),
  v.transform((text) => text as `0x${string}`),
)
const databaseUrl = v.pipe(
  v.string(),
  v.check(
    (text) =>
      text === ':memory:' ||
      /^file:.+/.test(text) ||
      (URL.canParse(text) && /^(libsql|https?|wss?|postgres|postgresql):$/.test(new URL(text).protocol)),
    'must be file:PATH, :memory:, a postgres:// URL, or a libsql:// URL',
  ),
)
const hops = v.pipe(
  v.string(),
  v.regex(/^(off|[0-9])$/, 'must be "off" or the number of proxies (0-9)'),
  v.transform((value) => (value === 'off' ? 0 : Number(value))),
)
/** A comma-separated list whose every entry passes `valid`; `example` says what to write otherwise. */
const commaList = (valid: (entry: string) => boolean, example: string) =>
  v.pipe(
    v.string(),
    v.transform((value) =>
      value
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    ),
    v.check((list) => list.every(valid), `must be a comma-separated list ${example}`),
  )
const origins = commaList(
  (origin) => URL.canParse(origin) && new URL(origin).origin === origin,
  'of origins such as https://app.example',
)
// The core's defaults (chain, token, confirmations, pairing), stated once in core's Config.ts.
const CORE = defaultConfig('http://localhost')
const SMTP = DEFAULT_SMTP_CONNECTION_LIMITS

const privateKey = v.pipe(
  v.string(),
  v.regex(/^0x[0-9a-fA-F]{64}$/, 'must be a private key: 0x and 64 hex digits'),
  v.transform((text) => text as `0x${string}`),
)
const timeoutSeconds = v.pipe(
  v.string(),
  v.regex(/^\d{1,4}$/, 'must be a whole number of seconds'),
  v.transform(Number),
  v.minValue(30, 'must be at least 30 seconds'),
  v.maxValue(3600, 'must be at most 3600 seconds'),
)
const p256PrivateJwk = v.pipe(
  v.string(),
  v.parseJson(undefined, 'must be a JSON Web Key'),
  v.looseObject(
    {
      kty: v.literal('EC', 'must be an EC key'),
      crv: v.literal('P-256', 'must be on P-256'),
      x: v.string(),
      y: v.string(),
      d: v.string('must be a private key (with d)'),
    },
    'must be a P-256 private JWK: {"kty":"EC","crv":"P-256","x":…,"y":…,"d":…}',
  ),
  v.transform((jwk) => jwk as Record<string, string>),
)
const secretOf32Bytes = v.pipe(
  v.string(),
  v.check((key) => new TextEncoder().encode(key).length >= 32, 'must be at least 32 bytes'),
)
const DNS_SERVER = /^(\d{1,3}(\.\d{1,3}){3}(:\d{1,5})?|\[[0-9a-fA-F:]+\](:\d{1,5})?|[0-9a-fA-F:]+)$/
const dnsServers = commaList(
  (entry) => DNS_SERVER.test(entry),
  'of DNS server addresses such as 1.1.1.1 or 127.0.0.1:5353',
)
// Every kind the core limits, from its one list, so a new kind is configurable at once.
const RATE_LIMIT = new RegExp(
  `^(${Object.keys(DEFAULT_RATE_POLICIES).join('|')})=([1-9]\\d{0,8})\\/([1-9]\\d{0,6})$`,
)
const ratePolicies = v.pipe(
  commaList(
    (entry) => RATE_LIMIT.test(entry),
    'such as read=1200/60,register=10/3600 (kind=requests/seconds)',
  ),
  v.transform((entries) =>
    Object.fromEntries(
      entries.map((entry) => {
        const [, kind = '', limit, seconds] = RATE_LIMIT.exec(entry) ?? []
        const policy: RatePolicy = { name: kind, limit: Number(limit), windowSeconds: Number(seconds) }
        return [kind as RateClass, policy]
      }),
    ),
  ),
)
const text = (max: number) =>
  v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(max, `must be at most ${max} characters`),
  )

/**
 * Reads and validates the environment; throws SettingsError naming the first bad variable.
 * @example const settings = readSettings(process.env)
 */
export function readSettings(env: Env): Settings {
  const listenPort = read(env, 'PORT', port, '3000')
  const baseUrl = withoutTrailing(
    read(env, 'BASE_URL', urlWith(['http:', 'https:'], 'http(s)'), `http://localhost:${listenPort}`),
    '/',
  )
  const host = new URL(baseUrl).hostname
  const optionalUrl = (name: string, protocols: string[], label: string) =>
    env[name] ? read(env, name, urlWith(protocols, label)) : null
  const secret = env.MPP_SECRET_KEY ? read(env, 'MPP_SECRET_KEY', secretOf32Bytes) : undefined
  return {
    port: listenPort,
    host: read(env, 'HOST', text(255), '0.0.0.0'),
    idleTimeoutSeconds: read(env, 'IDLE_TIMEOUT_SECONDS', idleSeconds, '30'),
    reusePort: read(env, 'REUSE_PORT', v.picklist(['on', 'off'], 'must be "on" or "off"'), 'off') === 'on',
    baseUrl,
    databaseUrl: read(env, 'DATABASE_URL', databaseUrl, 'file:./data/market.db'),
    databaseAuthToken: env.DATABASE_AUTH_TOKEN || undefined,
    databasePoolSize: read(env, 'DATABASE_POOL_SIZE', positive, '10'),
    databaseLockWaitSeconds: read(env, 'DATABASE_LOCK_WAIT_SECONDS', positive, '30'),
    claimLeaseSeconds: read(env, 'CLAIM_LEASE_SECONDS', positive, '120'),
    databaseTls: env.DATABASE_TLS
      ? read(
          env,
          'DATABASE_TLS',
          v.picklist(['off', 'require', 'verify-full'], 'must be off, require or verify-full'),
        )
      : undefined,
    databaseTimeouts: {
      connectMs: read(env, 'DATABASE_CONNECT_TIMEOUT_MS', positive, '1000'),
      requestMs: read(env, 'DATABASE_REQUEST_TIMEOUT_MS', positive, '1200'),
      searchMs: read(env, 'DATABASE_SEARCH_TIMEOUT_MS', positive, '1500'),
      backgroundMs: read(env, 'DATABASE_BACKGROUND_TIMEOUT_MS', positive, '10000'),
      migrationMs: read(env, 'DATABASE_MIGRATION_TIMEOUT_MS', positive, '300000'),
      copyMs: read(env, 'DATABASE_COPY_TIMEOUT_MS', positive, '300000'),
    },
    healthProbeTimeoutMs: read(env, 'HEALTH_PROBE_TIMEOUT_MS', positive, '1000'),
    chainRpcUrl: read(
      env,
      'CHAIN_RPC_URL',
      urlWith(['http:', 'https:', 'ws:', 'wss:'], 'http(s) or ws(s)'),
      'https://mainnet.base.org',
    ),
    chainId: read(env, 'CHAIN_ID', positive, String(CORE.chain.chainId)),
    chainRequestBudgetMs: read(env, 'CHAIN_REQUEST_BUDGET_MS', positive, String(CORE.chain.requestBudgetMs)),
    usdcContract: read(env, 'USDC_CONTRACT', address, CORE.chain.usdcContract),
    escrowContract: env.ESCROW_CONTRACT ? read(env, 'ESCROW_CONTRACT', address) : null,
    jobEscrowContract: env.JOB_ESCROW_CONTRACT ? read(env, 'JOB_ESCROW_CONTRACT', address) : null,
    jobEscrowStartBlock: env.JOB_ESCROW_START_BLOCK ? read(env, 'JOB_ESCROW_START_BLOCK', positive) : null,
    minConfirmations: read(env, 'MIN_CONFIRMATIONS', positive, String(CORE.chain.minConfirmations)),
    unpaidTaskTtlSeconds: read(env, 'UNPAID_TASK_TTL_SECONDS', positive, String(UNPAID_TASK_TTL_MS / 1000)),
    mppSecretKey: secret,
    mppRealm: read(env, 'MPP_REALM', text(255), host),
    tempoRpcUrl: read(
      env,
      'TEMPO_RPC_URL',
      urlWith(['http:', 'https:', 'ws:', 'wss:'], 'http(s) or ws(s)'),
      'https://rpc.tempo.xyz',
    ),
    mppCurrency: read(env, 'MPP_CURRENCY', address, CORE.mppNetwork.currency),
    x402SettlerKey: env.X402_SETTLER_KEY ? read(env, 'X402_SETTLER_KEY', privateKey) : undefined,
    x402MaxTimeoutSeconds: read(env, 'X402_MAX_TIMEOUT_SECONDS', timeoutSeconds, '300'),
    a2aCardSigningKey: env.A2A_CARD_SIGNING_KEY
      ? read(env, 'A2A_CARD_SIGNING_KEY', p256PrivateJwk)
      : undefined,
    pairingPrefix: read(
      env,
      'PAIRING_PREFIX',
      v.pipe(v.string(), v.regex(/^[A-Z0-9]{2,8}$/, 'must be 2-8 upper-case letters or digits')),
      CORE.pairingPrefix,
    ),
    pairingSecret: env.PAIRING_SECRET ? read(env, 'PAIRING_SECRET', secretOf32Bytes) : undefined,
    pairingCodeTtlSeconds: read(
      env,
      'PAIRING_CODE_TTL_SECONDS',
      positive,
      String(CORE.pairingCodeTtlMs / 1000),
    ),
    walletProofLegacy:
      read(
        env,
        'WALLET_PROOF_LEGACY',
        v.picklist(['accept', 'refuse'], 'must be accept or refuse'),
        'accept',
      ) === 'accept',
    orderMailbox: read(
      env,
      'ORDER_MAILBOX',
      v.pipe(v.string(), v.regex(/^[^\s@]+@[^\s@]+$/, 'must be an e-mail address')),
      `orders@${host}`,
    ),
    smtpInboundPort: env.SMTP_INBOUND_PORT ? read(env, 'SMTP_INBOUND_PORT', port) : null,
    smtpOutboundUrl: optionalUrl('SMTP_OUTBOUND_URL', ['smtp:', 'smtps:'], 'smtp:// or smtps://'),
    mailAuth: read(
      env,
      'MAIL_AUTH',
      v.picklist(['enforce', 'report', 'off'], 'must be enforce, report or off'),
      'enforce',
    ),
    mailDnsServers: read(env, 'MAIL_DNS_SERVERS', dnsServers, ''),
    smtpConnections: {
      perClient: read(env, 'SMTP_CLIENT_CONNECTIONS', positive, String(SMTP.perClient)),
      total: read(env, 'SMTP_CONNECTIONS_MAX', positive, String(SMTP.total)),
      sessionSeconds: read(env, 'SMTP_SESSION_SECONDS', positive, String(SMTP.sessionSeconds)),
    },
    feedStreams: {
      perClient: read(env, 'FEED_STREAMS_PER_CLIENT', positive, String(DEFAULT_STREAM_LIMITS.perClient)),
      total: read(env, 'FEED_STREAMS_MAX', positive, String(DEFAULT_STREAM_LIMITS.total)),
    },
    idempotencyQuota: {
      answers: read(env, 'IDEMPOTENCY_KEPT_ANSWERS', positive, String(DEFAULT_IDEMPOTENCY_QUOTA.answers)),
      bytes: read(env, 'IDEMPOTENCY_KEPT_BYTES', positive, String(DEFAULT_IDEMPOTENCY_QUOTA.bytes)),
    },
    rateLimits: read(env, 'RATE_LIMITS', v.picklist(['on', 'off'], 'must be "on" or "off"'), 'on') === 'on',
    webhookAllowPrivate:
      read(env, 'WEBHOOK_ALLOW_PRIVATE', v.picklist(['on', 'off'], 'must be "on" or "off"'), 'off') === 'on',
    ratePolicies: read(env, 'RATE_LIMIT_POLICIES', ratePolicies, ''),
    trustProxy: read(env, 'TRUST_PROXY', hops, 'off'),
    corsOrigins: read(env, 'CORS_ORIGINS', origins, ''),
    logLevel: read(
      env,
      'LOG_LEVEL',
      v.picklist(['info', 'warn', 'off'], 'must be info, warn or off'),
      'info',
    ),
  }
}

/** The core's config for these settings: the server, the demo seeder and any other entry point build it one way. */
export function marketConfig(settings: Settings): MarketConfig {
  return defaultConfig(settings.baseUrl, {
    pairingPrefix: settings.pairingPrefix,
    pairingCodeTtlMs: settings.pairingCodeTtlSeconds * 1000,
    walletProofLegacy: settings.walletProofLegacy,
    chain: {
      chainId: settings.chainId,
      usdcContract: settings.usdcContract,
      escrowContract: settings.escrowContract,
      jobEscrowContract: settings.jobEscrowContract,
      ...(settings.jobEscrowStartBlock !== null && {
        jobEscrowStartBlock: BigInt(settings.jobEscrowStartBlock),
      }),
      minConfirmations: settings.minConfirmations,
      requestBudgetMs: settings.chainRequestBudgetMs,
    },
    mppNetwork: { name: 'tempo', chainId: 4217, currency: settings.mppCurrency },
    orderMailbox: settings.orderMailbox,
    unpaidTaskTtlMs: settings.unpaidTaskTtlSeconds * 1000,
    webhookAllowPrivate: settings.webhookAllowPrivate,
    idempotencyQuota: settings.idempotencyQuota,
  })
}
