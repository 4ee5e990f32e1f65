import { defaultConfig, Marketplace } from '@agentmarket/core'
import { createApp } from './app.ts'
import { libsqlStore } from './db/libsqlStore.ts'
import { openDatabase } from './db/open.ts'
import { readSettings, type Settings, SettingsError } from './env.ts'

/** Opens the database, builds the marketplace and starts listening. Returns a stop function. */
export async function startServer(settings: Settings) {
  const database = await openDatabase(settings.databaseUrl, settings.databaseAuthToken)
  const store = libsqlStore(database)
  const config = defaultConfig(settings.baseUrl, {
    pairingPrefix: settings.pairingPrefix,
    chain: {
      chainId: settings.chainId,
      usdcContract: settings.usdcContract,
      escrowContract: settings.escrowContract,
      minConfirmations: settings.minConfirmations,
    },
  })
  const market = Marketplace.create({ store, config })
  const app = createApp({ market, baseUrl: settings.baseUrl })
  app.listen({ port: settings.port, hostname: settings.host })
  return {
    app,
    async stop() {
      await app.stop()
      await store.close()
    },
  }
}

if (import.meta.main) {
  let settings: Settings
  try {
    settings = readSettings(process.env)
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    console.error(`agentmarket: ${error.message}`)
    process.exit(1)
  }
  try {
    const server = await startServer(settings)
    console.log(
      `agentmarket listening on http://${settings.host}:${settings.port} (public ${settings.baseUrl})`,
    )
    const shutdown = () => server.stop().finally(() => process.exit(0))
    process.once('SIGINT', shutdown)
    process.once('SIGTERM', shutdown)
  } catch (error) {
    console.error(`agentmarket: cannot start: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
}
