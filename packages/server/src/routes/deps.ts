import type { MarketplaceActions } from '@agentmarket/core'
import type { ApiVersion } from '../versions.ts'

/** What every route group needs from the host. */
export type RouteDeps = {
  market: MarketplaceActions
  baseUrl: string
  version: string
  startedAt: Date
  versions: ApiVersion[]
  /** The order mailbox when orders by e-mail are taken, else null. */
  orderMailbox: string | null
}

/** The query string as a plain object (last value wins), untouched by framework coercion. */
export function queryOf(request: Request): Record<string, string> {
  return Object.fromEntries(new URL(request.url).searchParams)
}
