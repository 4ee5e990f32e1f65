import type { Address } from 'viem'
import { PAIRING_CODE_TTL_MS } from './PairingCode.ts'
import { DEFAULT_CHAIN_BUDGET_MS } from './ports/chainBudget.ts'
import { withoutTrailing } from './Trim.ts'

/** Settings of one marketplace deployment. */
export type MarketConfig = {
  /** Public base address without a trailing slash, e.g. `https://market.example`. */
  baseUrl: string
  /** Prefix of pairing codes, e.g. `AGM`. */
  pairingPrefix: string
  /** How long a pairing code may be spent after it is issued (ms). */
  pairingCodeTtlMs: number
  /** Whether the deprecated EIP-191 wallet proof (no market, no body) is still accepted. */
  walletProofLegacy: boolean
  /** The payment chain. */
  chain: {
    chainId: number
    usdcContract: Address
    escrowContract: Address | null
    /** The job escrow (contracts/JobEscrow.sol, docs/jobs.md); absent or null: jobs are not funded in escrow. */
    jobEscrowContract?: Address | null
    /** The block the job escrow's follower starts from on its first run; absent: 50,000 blocks before the head. */
    jobEscrowStartBlock?: bigint
    /** Blocks, counting the one holding the transaction, before a payment counts. */
    minConfirmations: number
    /**
     * Milliseconds of chain calls one request may wait in all (CHAIN_REQUEST_BUDGET_MS): once spent, it answers 503
     * `chain_unavailable` (or, after a broadcast, its pending payment). Background passes keep each call's own bound.
     * @default 10_000
     */
    requestBudgetMs?: number
  }
  /** The machine-payment network (MPP, Tempo): where per-skill orders are paid. */
  mppNetwork: { name: string; chainId: number; currency: Address }
  /** The address orders arrive at by e-mail and replies come from. */
  orderMailbox: string
  /** Who operates this marketplace, shown in agent cards. */
  provider: { organization: string; url: string }
  /** Milliseconds an unpaid task waits for its payment before it is `expired`. @default 24 hours */
  unpaidTaskTtlMs?: number
  /**
   * Whether webhook endpoints may be private, loopback or link-local addresses (WEBHOOK_ALLOW_PRIVATE: a test or an
   * internal network). @default false
   */
  webhookAllowPrivate?: boolean
  /** How much of the answers kept for Idempotency-Key replays one client may hold. @default DEFAULT_IDEMPOTENCY_QUOTA */
  idempotencyQuota?: IdempotencyQuota
}

/** How much of the answers kept for Idempotency-Key replays one client may hold at once (within 24 hours). */
export type IdempotencyQuota = {
  /** Answers kept per client address and per API key. */
  answers: number
  /** Bytes of kept answers as stored (sealed, in hex: about twice their JSON) per client address and per API key. */
  bytes: number
}

/**
 * The default quota: 10,000 answers and 16 MiB stored per client a day (an IPv6 /48 network eight times that, as its
 * rate-limit ceiling). A client past it still has its writes run once; their answers are not kept.
 */
export const DEFAULT_IDEMPOTENCY_QUOTA: Readonly<IdempotencyQuota> = {
  answers: 10_000,
  bytes: 16 * 1024 * 1024,
}

/** USDC.e on Tempo mainnet, the default MPP currency. */
export const TEMPO_USDC_E: Address = '0x20C000000000000000000000b9537d11c60E8b50'

/** Base mainnet's USDC. */
export const BASE_USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

/** A config for `baseUrl` with the defaults of CONTRACT.md (Base mainnet, USDC, no escrow). */
export function defaultConfig(baseUrl: string, overrides: Partial<MarketConfig> = {}): MarketConfig {
  const base = withoutTrailing(baseUrl, '/')
  return {
    baseUrl: base,
    pairingPrefix: 'AGM',
    pairingCodeTtlMs: PAIRING_CODE_TTL_MS,
    walletProofLegacy: true,
    chain: {
      chainId: 8453,
      usdcContract: BASE_USDC,
      escrowContract: null,
      minConfirmations: 3,
      requestBudgetMs: DEFAULT_CHAIN_BUDGET_MS,
    },
    mppNetwork: { name: 'tempo', chainId: 4217, currency: TEMPO_USDC_E },
    orderMailbox: `orders@${new URL(base).hostname}`,
    provider: { organization: 'agentmarket', url: base },
    ...overrides,
  }
}

/** A short identifier of a chain id: `base`, `base-sepolia`, or `eip155:<id>`. */
export function chainName(chainId: number): string {
  if (chainId === 8453) return 'base'
  if (chainId === 84532) return 'base-sepolia'
  return `eip155:${chainId}`
}
