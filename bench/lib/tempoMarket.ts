import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMarketServer } from '../../tests/support/process.ts'
import { scriptedTempo } from '../../tests/support/tempo.ts'

/**
 * The scripted Tempo node serving its RPC, and a temporary folder for agentmarket's data; `startMarket` starts
 * agentmarket as `bun start` does (production, a file database in the folder, MPP paid on the node), with `env` added.
 * @example const tempo = await tempoMarketSetup('mpp'); const server = await tempo.startMarket(); ...; await tempo.stop()
 */
export async function tempoMarketSetup(name: string) {
  const node = scriptedTempo()
  const rpc = await node.serve()
  const folder = mkdtempSync(join(tmpdir(), `agentmarket-bench-${name}-`))
  const databaseFile = join(folder, 'market.db')
  return {
    node,
    rpc,
    folder,
    databaseFile,
    /** Starts agentmarket on the node, its data in the folder, with `env` added (another chain, a settler key). */
    startMarket: (env: Record<string, string> = {}) =>
      startMarketServer({
        NODE_ENV: 'production',
        HOME: folder,
        DATABASE_URL: `file:${databaseFile}`,
        TEMPO_RPC_URL: rpc.url,
        ...env,
      }),
    /** Stops the node's RPC and removes the folder (stop the market first). */
    async stop() {
      await rpc.stop()
      rmSync(folder, { recursive: true, force: true })
    },
  }
}
