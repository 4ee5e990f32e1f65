import { agentActions } from './actions/agents/index.ts'
import { budgetActions } from './actions/budgets/index.ts'
import { type ActionContext, MILESTONE_MEMO_SIZE } from './actions/context.ts'
import { feedActions } from './actions/feed.ts'
import { idempotencyActions } from './actions/idempotency.ts'
import { mailActions } from './actions/mail/index.ts'
import { taskActions } from './actions/tasks/index.ts'
import { userActions } from './actions/users/index.ts'
import { webhookActions } from './actions/webhooks/index.ts'
import type { MarketConfig } from './Config.ts'
import { createFeedHub } from './FeedHub.ts'
import type { MilestoneView } from './Milestone.ts'
import { pairingDigests } from './PairingCode.ts'
import { createMppCharger, type MppSettings } from './payments/Mpp.ts'
import type { X402Settings } from './payments/X402.ts'
import type { CardSigner } from './ports/CardSigner.ts'
import type { ChainReader } from './ports/Chain.ts'
import { type Clock, systemClock } from './ports/Clock.ts'
import { cryptoRandom, type Random } from './ports/Random.ts'
import type { Store } from './ports/Store.ts'
import { countWrites } from './ports/writeScope.ts'
import { readCache } from './ReadCache.ts'

/** What a host hands the core. Clock and randomness default to the real ones. */
export type MarketplacePorts = {
  store: Store
  config: MarketConfig
  clock?: Clock
  random?: Random
  chain?: ChainReader
  /** Machine payments on per-skill paths; without it those answer 503. */
  mpp?: MppSettings
  /** x402 payments (the `exact` scheme, USDC by EIP-3009) on per-skill paths, beside or instead of MPP. */
  x402?: X402Settings
  /** Signs the A2A cards it serves (JWS); without it they are served unsigned. */
  cardSigner?: CardSigner
  /** How often live feed followers poll the store for events other processes wrote (ms). */
  feedPollMs?: number
  /** Called after this process writes feed events (the host's background senders wake on it). */
  onEventsWritten?: () => void
  /** The key pairing codes are kept under (HMAC); without it, one made once and kept in the store. */
  pairingSecret?: string
}

/**
 * The marketplace: every action a host exposes, over the ports it is given.
 * @example
 * const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://localhost:3000') })
 * const { apiKey } = await market.registerAgent({ name: 'scout' })
 * await market.heartbeat('scout', apiKey)
 */
export const Marketplace = {
  /** Builds the actions over the given ports. */
  create(ports: MarketplacePorts) {
    const random = ports.random ?? cryptoRandom()
    const context: ActionContext<Store> = {
      store: countWrites(ports.store),
      config: ports.config,
      clock: ports.clock ?? systemClock(),
      random,
      feed: createFeedHub(ports.store, ports.feedPollMs, ports.onEventsWritten),
      chain: ports.chain ?? null,
      mpp: ports.mpp ? createMppCharger(ports.mpp, ports.store) : null,
      x402: ports.x402 ?? null,
      cardSigner: ports.cardSigner ?? null,
      credentials: new Map(),
      newestMilestones: readCache<MilestoneView[]>(MILESTONE_MEMO_SIZE),
      pairing: pairingDigests(ports.store, random, ports.pairingSecret),
    }
    return {
      /** The configuration it was made with (its public base URL, chain, mailbox). */
      config: ports.config,
      ...agentActions(context),
      ...budgetActions(context),
      ...userActions(context),
      ...feedActions(context),
      ...taskActions(context),
      ...mailActions(context),
      ...webhookActions(context),
      ...idempotencyActions(context),
      /** True when the store answers. */
      async storeIsHealthy(): Promise<boolean> {
        return ports.store.ping().then(
          () => true,
          () => false,
        )
      },
    }
  },
}

/** The actions of a marketplace, as hosts receive them. */
export type MarketplaceActions = ReturnType<typeof Marketplace.create>
