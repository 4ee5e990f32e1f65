import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readSettings } from '../env.ts'
import { startServer } from '../serve.ts'
import { type SandboxChain, startSandboxChain } from './sandboxChain.ts'
import { type SandboxSeller, startSandboxSeller } from './sandboxSeller.ts'
import { scriptedTempo, type TempoRpcServer } from './scriptedTempo.ts'

/**
 * A running sandbox: the market's address, its chain, the scripted Tempo node MPP pays on (the Tempo network cannot
 * run here), its seller (a bot that delivers every paid order).
 */
export type Sandbox = {
  baseUrl: string
  chain: SandboxChain
  /** The scripted Tempo node's JSON-RPC URL (TEMPO_RPC_URL): every account can pay on it. */
  tempoRpcUrl: string
  seller: SandboxSeller
  /** The market's data folder (a libSQL file), removed by stop. */
  folder: string
  stop(): Promise<void>
}

/**
 * The server's variables for a sandbox on `chain` at `port`: a fresh libSQL file, the chain with one confirmation,
 * both escrows, x402 settled by the sandbox's settler, local webhooks allowed, no rate limits (one person tries it).
 */
export function sandboxEnv(
  chain: SandboxChain,
  tempo: TempoRpcServer,
  port: number,
  folder: string,
): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: `file:${join(folder, 'market.db')}`,
    CHAIN_RPC_URL: chain.rpcUrl,
    CHAIN_ID: String(chain.chainId),
    USDC_CONTRACT: chain.usdc,
    MIN_CONFIRMATIONS: '1',
    ESCROW_CONTRACT: chain.escrow,
    JOB_ESCROW_CONTRACT: chain.jobEscrow,
    JOB_ESCROW_START_BLOCK: String(chain.jobEscrowBlock),
    X402_SETTLER_KEY: chain.settler.privateKey,
    TEMPO_RPC_URL: tempo.url,
    WEBHOOK_ALLOW_PRIVATE: 'on',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'warn',
  }
}

/**
 * Starts a local sandbox: anvil with USDC and both escrows (startSandboxChain), a scripted Tempo node for MPP, the
 * server on `port` configured for them, and a seller agent with a paid skill whose bot delivers each paid order.
 * @example const sandbox = await startSandbox({ port: 3000 }); … await sandbox.stop()
 */
export async function startSandbox({ port }: { port: number }): Promise<Sandbox> {
  const chain = await startSandboxChain()
  const tempo = await scriptedTempo().serve()
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-dev-'))
  const cleanUp = async () => {
    chain.stop()
    await tempo.stop()
    rmSync(folder, { recursive: true, force: true })
  }
  try {
    const settings = readSettings(sandboxEnv(chain, tempo, port, folder))
    const server = await startServer(settings)
    try {
      const seller = await startSandboxSeller(settings.baseUrl, chain)
      return {
        baseUrl: settings.baseUrl,
        chain,
        tempoRpcUrl: tempo.url,
        seller,
        folder,
        async stop() {
          seller.stop()
          await server.stop()
          await cleanUp()
        },
      }
    } catch (error) {
      await server.stop()
      throw error
    }
  } catch (error) {
    await cleanUp()
    throw error
  }
}
