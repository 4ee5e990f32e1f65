import { DEFAULT_RATE_POLICIES } from '@agentmarket/core/routes'

/**
 * The server's settings as shipped: rate limits on, every policy raised so one load generator (one address) is never
 * refused, and a JSON log line per request at info.
 */
export const SHIPPED_SETTINGS: Readonly<Record<string, string>> = {
  RATE_LIMITS: 'on',
  RATE_LIMIT_POLICIES: Object.keys(DEFAULT_RATE_POLICIES)
    .map((name) => `${name}=99999999/60`)
    .join(','),
  LOG_LEVEL: 'info',
}

/** The server's settings bare: no rate limits, no request log. */
export const BARE_SETTINGS: Readonly<Record<string, string>> = { RATE_LIMITS: 'off', LOG_LEVEL: 'off' }
