// @ts-check
import { defaultConfig, Marketplace } from '@agentmarket/core'
import { viemChain } from '@agentmarket/core/viem'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { serve } from '@hono/node-server'
import { createMarketApp } from './app.js'

/** How often payments sent with an order, not yet final, are checked again. */
const RECHECK_MS = 5_000

/**
 * Stops with one line naming a malformed variable, as the server does.
 * @param {string} name @param {string} value @param {string} why @returns {never}
 */
function invalid(name, value, why) {
  console.error(`hono-node: ${name}="${value}" is invalid: ${why}`)
  process.exit(1)
}

/** The listen port from PORT (default 3000). */
function portFrom(value = '3000') {
  const port = Number(value)
  return /^\d{1,5}$/.test(value) && port <= 65_535 ? port : invalid('PORT', value, 'must be a port number')
}

/** An http(s) URL from the variable `name`, or `fallback` when it is unset. @param {string} name */
function urlFrom(name, fallback = '') {
  const value = process.env[name] ?? fallback
  return !value || (/^https?:\/\//.test(value) && URL.canParse(value))
    ? value
    : invalid(name, value, 'must be an http(s) URL')
}

const port = portFrom(process.env.PORT)
const baseUrl = urlFrom('BASE_URL', `http://localhost:${port}`)
const rpcUrl = urlFrom('CHAIN_RPC_URL')
const database = await openDatabase(process.env.DATABASE_URL ?? 'file:./data/hono-example.db')
const market = Marketplace.create({
  store: libsqlStore(database),
  config: defaultConfig(baseUrl),
  chain: rpcUrl ? viemChain({ rpcUrl }) : undefined,
})
// The core re-checks payments sent with an order only when its host asks; without a chain there are none.
const rechecks = rpcUrl
  ? setInterval(() => market.recheckPendingPayments().catch(console.error), RECHECK_MS)
  : undefined
const app = createMarketApp(market).get('/health', (c) => c.json({ status: 'ok' }))
const server = serve({ fetch: app.fetch, port }, (info) =>
  console.log(`hono-node: listening on http://localhost:${info.port} (Node.js ${process.version})`),
)

process.once('SIGTERM', () => {
  clearInterval(rechecks)
  server.close(() => {
    database.close()
    process.exit(0)
  })
})
