import {
  cryptoRandom,
  Marketplace,
  type MarketplaceActions,
  type MppSettings,
  persistentMppSecret,
  type RateBuckets,
  type Store,
  type X402Settings,
} from '@agentmarket/core'
import {
  fallbackRateBuckets,
  leasedRateBuckets,
  type RateLimiter,
  rateLimiter,
} from '@agentmarket/core/routes'
import { budgetedTransport, viemChain, viemX402Facilitator } from '@agentmarket/core/viem'
import { whileBusy } from '@agentmarket/store-libsql'
import { type Client, createClient, defineChain, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { cardSigner } from './a2a/cardSigning.ts'
import { createApp } from './app.ts'
import { openMarketDatabase } from './database.ts'
import { marketConfig, type Settings } from './env.ts'
import { jsonLogger, type Logger } from './log.ts'
import { startPaymentRechecks } from './rechecks.ts'
import { startWebhookDelivery } from './webhooks/delivery.ts'
import { fetchWebhookTransport } from './webhooks/transport.ts'

/** How often pending payments sent at creation are re-checked (each task also backs off on its own). */
const RECHECK_INTERVAL_MS = 1_000
/** How often the outbox is looked at (each entry also backs off on its own). */
const OUTBOX_INTERVAL_MS = 1_000
/** How often new task events are fanned out to webhook endpoints and due deliveries sent. */
const WEBHOOK_INTERVAL_MS = 250
/** How long a SIGTERM or SIGINT may take to finish requests in flight and flush before the process exits anyway. */
const SHUTDOWN_DEADLINE_MS = 15_000

/** A client of the MPP network (Tempo mainnet), made on the first paid request: its chain module is slow to load. */
function tempoClient(rpcUrl: string): () => Promise<Client> {
  let client: Promise<Client> | null = null
  return () => {
    client ??= import('viem/tempo/chains').then(({ tempo }) =>
      createClient({
        chain: tempo,
        // Its calls share the chain budget of the request that makes them (an MPP broadcast's reads and send).
        transport: budgetedTransport(http(rpcUrl, { retryCount: 0, timeout: 10_000 })),
      }),
    )
    return client
  }
}

/** Machine-payment settings: the configured secret, or one made once and kept in the database. */
async function mppSettings(settings: Settings, store: Store): Promise<MppSettings> {
  return {
    // Processes starting together on a new database race to make the secret; the loser reads the winner's.
    secretKey: settings.mppSecretKey ?? (await whileBusy(() => persistentMppSecret(store, cryptoRandom()))),
    realm: settings.mppRealm,
    currency: settings.mppCurrency,
    getClient: tempoClient(settings.tempoRpcUrl),
  }
}

/** x402 payments on the payment chain, settled by this node's own key; undefined without X402_SETTLER_KEY. */
function x402Settings(settings: Settings): X402Settings | undefined {
  if (!settings.x402SettlerKey) return undefined
  const chain = defineChain({
    id: settings.chainId,
    name: `eip155:${settings.chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [settings.chainRpcUrl] } },
  })
  return {
    facilitator: viemX402Facilitator({
      rpcUrl: settings.chainRpcUrl,
      chain,
      account: privateKeyToAccount(settings.x402SettlerKey),
    }),
    maxTimeoutSeconds: settings.x402MaxTimeoutSeconds,
  }
}

/**
 * Rate limits kept in the database, so every process on it shares them; null when RATE_LIMITS=off. While the database
 * cannot take (a full disk, an outage) they are kept in this process, so reads still answer and limits still hold.
 */
function rateLimitSettings(settings: Settings, buckets: RateBuckets) {
  if (!settings.rateLimits) return null
  return {
    limiter: rateLimiter(leasedRateBuckets(fallbackRateBuckets(buckets)), {
      policies: settings.ratePolicies,
      // Bun's native 64-bit hash: a bucket name per key at a fraction of SHA-256's cost on every write.
      keyBucket: (apiKey) => Bun.hash(apiKey).toString(36),
    }),
    trustedProxies: settings.trustProxy,
  }
}

/**
 * Orders by e-mail: the outbox sender when a relay is set, the SMTP listener when its port is set. The mail modules
 * load only then, so a server without mail starts without them.
 */
async function startMail(
  settings: Settings,
  market: MarketplaceActions,
  limiter: RateLimiter | null,
  logger: Logger,
) {
  const { smtpOutboundUrl: relay, smtpInboundPort: port } = settings
  const mailer = relay ? (await import('./mail/smtpMailer.ts')).smtpMailer(relay) : null
  const delivery = mailer
    ? (await import('./mail/delivery.ts')).startMailDelivery(market, mailer, {
        intervalMs: OUTBOX_INTERVAL_MS,
        leaseMs: settings.claimLeaseSeconds * 1000,
        logger,
      })
    : null
  const listener =
    port === null
      ? null
      : await (await import('./mail/listener.ts')).startOrderListener({
          market,
          mailbox: settings.orderMailbox,
          port,
          host: settings.host,
          onTaken: () => delivery?.kick(),
          mailAuth: { policy: settings.mailAuth, dnsServers: settings.mailDnsServers },
          connections: settings.smtpConnections,
          limiter,
          logger,
        })
  return {
    port: listener?.port ?? null,
    async stop() {
      await listener?.close()
      await delivery?.stop()
      mailer?.close()
    },
  }
}

/**
 * Listens on PORT and HOST. A port another process listens on is an error naming it, unless REUSE_PORT=on asks to
 * share it (the kernel then spreads connections across the processes; Bun's adapter would share it silently).
 */
function listen(app: ReturnType<typeof createApp>, settings: Settings): void {
  const { port, host, reusePort } = settings
  try {
    app.listen({ port, hostname: host, idleTimeout: settings.idleTimeoutSeconds, reusePort })
  } catch (error) {
    if ((error as { code?: string }).code !== 'EADDRINUSE') throw error
    throw new Error(
      `port ${port} on ${host} is already in use by another process; stop it or set another PORT (REUSE_PORT=on shares the port on purpose)`,
      { cause: error },
    )
  }
}

/** Opens the database, builds the marketplace and starts listening. Returns a stop function. */
export async function startServer(settings: Settings) {
  const logger = jsonLogger(settings.logLevel)
  const database = await openMarketDatabase(settings)
  const { store } = database
  const config = marketConfig(settings)
  const chain = viemChain({ rpcUrl: settings.chainRpcUrl })
  const mpp = await mppSettings(settings, store)
  const x402 = x402Settings(settings)
  const signer = cardSigner(store, settings.baseUrl, settings.a2aCardSigningKey)
  let wakeWebhooks = () => {}
  const market = Marketplace.create({
    store,
    config,
    chain,
    mpp,
    x402,
    cardSigner: signer,
    pairingSecret: settings.pairingSecret,
    // The webhook sender starts below; until then there is nothing to wake.
    onEventsWritten: () => wakeWebhooks(),
  })
  const orderMailbox = settings.smtpInboundPort === null ? null : settings.orderMailbox
  const rateLimits = rateLimitSettings(settings, database.rateBuckets)
  const app = createApp({
    market,
    baseUrl: settings.baseUrl,
    orderMailbox,
    rateLimits,
    trustedProxies: settings.trustProxy,
    streamLimits: settings.feedStreams,
    corsOrigins: settings.corsOrigins,
    logger,
    healthProbes: { timeoutMs: settings.healthProbeTimeoutMs, chain: () => chain.headBlock() },
  })
  const rechecks = startPaymentRechecks(market, {
    intervalMs: RECHECK_INTERVAL_MS,
    leaseMs: settings.claimLeaseSeconds * 1000,
    logger,
  })
  const webhooks = startWebhookDelivery(
    market,
    fetchWebhookTransport({ allowPrivate: settings.webhookAllowPrivate }),
    { intervalMs: WEBHOOK_INTERVAL_MS, logger },
  )
  wakeWebhooks = webhooks.wake
  // Mail first: once HTTP answers, every channel is ready (a health check is how hosts and tests wait for us).
  const mail = await startMail(settings, market, rateLimits?.limiter ?? null, logger)
  try {
    listen(app, settings)
  } catch (error) {
    await Promise.all([mail.stop(), webhooks.stop(), rechecks.stop()])
    await store.close()
    throw error
  }
  return {
    app,
    logger,
    /** Whether an uncaught error is a database connection's fault, which the pool recovers from. */
    isDriverFault: database.isDriverFault,
    /** The port of the order mailbox, when it is on. */
    mailPort: mail.port,
    /**
     * Stops taking requests and lets those in flight finish (their writes are committed before they are
     * answered), then stops mail (a last outbox pass) and the re-checks, then closes the database.
     */
    async stop() {
      await app.stop()
      await mail.stop()
      await webhooks.stop()
      await rechecks.stop()
      await store.close()
      // Elysia logs a request in a setImmediate after answering it: one more turn lets the last ones in.
      await new Promise((resolve) => setImmediate(resolve))
      logger.flush(true)
    },
  }
}

/** `agentmarket serve`: starts the server, logs where it listens, and stops it on SIGTERM or SIGINT. */
export async function serve(settings: Settings) {
  const server = await startServer(settings)
  const { logger } = server
  logger.info('listening', {
    url: `http://${settings.host}:${settings.port}`,
    baseUrl: settings.baseUrl,
    rateLimits: settings.rateLimits,
  })
  if (server.mailPort !== null)
    logger.info('taking orders by e-mail', { mailbox: settings.orderMailbox, smtpPort: server.mailPort })
  const shutdown = (signal: string) => {
    logger.info('stopping', { signal })
    // A stop that hangs (a request that never ends) must not keep the process: exit 1 after the deadline.
    setTimeout(() => process.exit(1), SHUTDOWN_DEADLINE_MS).unref()
    server.stop().then(
      () => process.exit(0),
      (error) => {
        logger.error('shutdown failed', {}, error)
        logger.flush(true)
        process.exit(1)
      },
    )
  }
  process.once('SIGINT', shutdown)
  process.once('SIGTERM', shutdown)
  // The database driver may throw from its own socket events when the database goes away (an ECONNRESET with no
  // query to fail): the pool reconnects by itself, so such a fault is logged with an id and the node serves on.
  // Anything else stays fatal.
  const contain = (error: unknown) => {
    if (server.isDriverFault(error)) {
      logger.error('database driver fault contained', { faultId: crypto.randomUUID() }, error)
      return
    }
    logger.error('uncaught exception', {}, error)
    logger.flush(true)
    process.exit(1)
  }
  process.on('uncaughtException', contain)
  process.on('unhandledRejection', contain)
}
