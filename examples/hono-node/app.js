import { createFetchHandler } from '@agentmarket/core'
import { Hono } from 'hono'

/**
 * Every marketplace route (`/api/…` and `/api/v1/…`, from the core's route table) mounted in a new Hono app: the
 * core's fetch handler answers them, Hono keeps the rest of the app.
 */
export function createMarketApp(/** @type {import('@agentmarket/core').MarketplaceActions} */ market) {
  const marketplace = createFetchHandler(market)
  return new Hono().all('/api/*', (c) => marketplace.fetch(c.req.raw))
}
