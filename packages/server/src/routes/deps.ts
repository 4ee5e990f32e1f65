import type { MarketplaceActions } from '@agentmarket/core'
import type { RateClass, StreamSlots } from '@agentmarket/core/routes'
import type { Server } from 'elysia/universal'
import type { PeerSource } from '../plugins/rateLimits.ts'
import type { ApiVersion } from '../versions.ts'
import type { HealthProbes } from './discovery.ts'

/** What every route group needs from the host. */
export type RouteDeps = {
  market: MarketplaceActions
  baseUrl: string
  version: string
  startedAt: Date
  versions: ApiVersion[]
  /** The order mailbox when orders by e-mail are taken, else null. */
  orderMailbox: string | null
  /** The listening server (null when a host calls `app.handle`): it tells the peer's address. */
  server(): Server | null
  /** The client's address as rate limits see it (TRUST_PROXY applied): it scopes Idempotency-Keys and re-checks. */
  clientOf(request: Request, server: PeerSource): string
  /** Admission of live feed streams: at most so many per client address and in all. */
  streams: StreamSlots
  /** How health checks probe the database and chain; absent: the database within 1 s, the chain unchecked. */
  healthProbes?: HealthProbes | undefined
  /**
   * Spends one more token (or `tokens`) of `rateClass` for the request's client, its headers shown in `headers`;
   * absent: no limits.
   */
  charge?:
    | ((
        rateClass: RateClass,
        request: Request,
        server: PeerSource,
        headers: Record<string, unknown>,
        tokens?: number,
      ) => void | Promise<void>)
    | undefined
}

/** The query string as a plain object (last value wins), untouched by framework coercion. */
export function queryOf(request: Request): Record<string, string> {
  return Object.fromEntries(new URL(request.url).searchParams)
}
