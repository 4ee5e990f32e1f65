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

/** The bearer token of an `Authorization` header, or undefined when absent or of another scheme. */
export function bearerToken(header: string | undefined | null): string | undefined {
  const match = /^Bearer[ \t]+(\S+)\s*$/i.exec(header ?? '')
  return match?.[1]
}

/** The query string as a plain object (last value wins), untouched by framework coercion. */
export function queryOf(request: Request): Record<string, string> {
  return Object.fromEntries(new URL(request.url).searchParams)
}
