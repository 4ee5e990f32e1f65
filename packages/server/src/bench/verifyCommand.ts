import type { ChainReader, PaymentCheck } from '@agentmarket/core'
import { viemChain } from '@agentmarket/core/viem'
import { type Hex, hexToNumber } from 'viem'
import type { Settings } from '../env.ts'
import { AnvilNotFoundError, type AnvilProcess, spawnAnvil } from './anvil.ts'
import { anvilAccounts } from './anvilAccounts.ts'
import type { VerifyOptions } from './benchLine.ts'
import { formatCount } from './format.ts'
import { checksForHashes } from './hashChecks.ts'
import { HashFileError, readHashFile } from './hashFile.ts'
import { installMockUsdc, USDC_ADDRESS } from './mockUsdc.ts'
import { rpcBatch } from './rpcBatch.ts'
import { type GeneratedTransfer, generateTransfers } from './transfers.ts'
import { benchVerification } from './verifyBench.ts'
import { reportJson, reportText, type VerifyReport } from './verifyReport.ts'

/** A reason to stop, with its exit code: 2 for a missing input (as a usage error), 1 for a failure. */
class Stop extends Error {
  constructor(
    readonly exitCode: 1 | 2,
    message: string,
  ) {
    super(message)
  }
}

/** The payments to measure, the chain they are on, what the report says about them, and what to stop after. */
type Input = {
  chain: ChainReader
  /** Where the chain is read; never printed (its path or query may hold an API key). */
  rpcUrl: string
  checks: PaymentCheck[]
  about: Omit<VerifyReport, 'payments' | 'runs' | 'floor' | 'batched' | 'naive'>
  stop(): void
}

type Env = Record<string, string | undefined>

const progress = (line: string) => process.stderr.write(`bench verify: ${line}\n`)
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`

/** What went wrong, in one line: viem's short message (its full one spans lines and names the RPC's URL). */
function firstLine(error: unknown): string {
  const { shortMessage, message } = error instanceof Error ? (error as Error & { shortMessage?: string }) : {}
  return (shortMessage ?? message ?? String(error)).split('\n')[0] ?? ''
}

/** The check of a generated transfer: its own seller, amount and buyer. */
function checkOf(transfer: GeneratedTransfer, minConfirmations: number): PaymentCheck {
  const { hash, buyer, seller, amount } = transfer
  return {
    txHash: hash,
    kind: 'transfer',
    expected: { token: USDC_ADDRESS, recipient: seller, minAmount: amount, sender: buyer, minConfirmations },
  }
}

/** The chain id the JSON-RPC at `rpcUrl` serves; Stop when it does not answer. */
async function chainIdAt(rpcUrl: string): Promise<number> {
  try {
    const [id] = await rpcBatch(rpcUrl, [{ method: 'eth_chainId', params: [] }])
    return hexToNumber(id as Hex)
  } catch (error) {
    throw new Stop(1, `cannot read the chain at ${new URL(rpcUrl).host}: ${firstLine(error)}`)
  }
}

/** The transactions of a hashes file on the configured chain, checked as USDC payments to any seller. */
async function hashInput(path: string, rpc: string | null, settings: Settings, env: Env): Promise<Input> {
  const rpcUrl = rpc ?? (env.CHAIN_RPC_URL ? settings.chainRpcUrl : null)
  if (!rpcUrl)
    throw new Stop(
      2,
      'bench verify --hashes needs the chain: set CHAIN_RPC_URL or pass --rpc URL; run agentmarket bench --help for the benchmarks and their options',
    )
  let hashes: Hex[]
  try {
    hashes = readHashFile(path)
  } catch (error) {
    if (error instanceof HashFileError) throw new Stop(2, error.message)
    throw error
  }
  const rpcHost = new URL(rpcUrl).host
  const chainId = await chainIdAt(rpcUrl)
  if (chainId !== settings.chainId)
    throw new Stop(
      1,
      `the chain at ${rpcHost} is chain ${chainId}, not CHAIN_ID ${settings.chainId}: set CHAIN_ID and USDC_CONTRACT for it`,
    )
  const chain = viemChain({ rpcUrl })
  const { usdcContract: token, minConfirmations } = settings
  const checks = await checksForHashes(chain, hashes, { token, minConfirmations })
  return {
    chain,
    rpcUrl,
    checks,
    about: { source: 'hashes', chainId, rpcHost, token, minConfirmations },
    stop: () => {},
  }
}

/** An anvil started for the run; Stop with how to get one when there is none. */
async function startedAnvil(): Promise<AnvilProcess> {
  try {
    return await spawnAnvil()
  } catch (error) {
    if (!(error instanceof AnvilNotFoundError)) throw error
    throw new Stop(
      2,
      'bench verify --generate needs anvil, which was not found: install it with npm i -g @foundry-rs/anvil, or pass --rpc URL of an anvil you run',
    )
  }
}

/** `count` USDC transfers made on an anvil (started here, or the one at `rpc`), each checked with what it paid. */
async function generatedInput(count: number, rpc: string | null, settings: Settings): Promise<Input> {
  const anvil = rpc ? null : await startedAnvil()
  const rpcUrl = rpc ?? anvil?.rpcUrl ?? ''
  try {
    const started = performance.now()
    await installMockUsdc(rpcUrl).catch((error: Error) => {
      if (!rpc) throw error
      throw new Stop(1, `--generate needs an anvil at --rpc ${new URL(rpc).host}: ${error.message}`)
    })
    const { minConfirmations } = settings
    const generated = await generateTransfers(rpcUrl, anvilAccounts(), {
      count,
      confirmations: minConfirmations,
    })
    progress(
      `${formatCount(count)} USDC transfers mined into ${generated.blockSizes.length} blocks in ${seconds(started)}`,
    )
    const checks = generated.transfers.map((transfer) => checkOf(transfer, minConfirmations))
    return {
      chain: viemChain({ rpcUrl }),
      rpcUrl,
      checks,
      about: {
        source: 'generated',
        chainId: generated.chainId,
        rpcHost: new URL(rpcUrl).host,
        token: USDC_ADDRESS,
        minConfirmations,
      },
      stop: () => anvil?.stop(),
    }
  } catch (error) {
    anvil?.stop()
    throw error
  }
}

/**
 * `agentmarket bench verify`: gets the payments (a hashes file on the configured chain, or transfers generated on
 * anvil), measures batched and naive verification, and prints the table or, with --json, one JSON object; progress
 * goes to standard error. Resolves to the exit code: 2 for a missing input, 1 for a failure, each after one line.
 * @example process.exitCode = await runVerifyBench(options, readSettings(process.env), process.env)
 */
export async function runVerifyBench(options: VerifyOptions, settings: Settings, env: Env): Promise<number> {
  let input: Input | null = null
  try {
    input =
      options.input.kind === 'hashes'
        ? await hashInput(options.input.path, options.rpc, settings, env)
        : await generatedInput(options.input.count, options.rpc, settings)
    const started = performance.now()
    const figures = await benchVerification(input.chain, input.rpcUrl, input.checks, {
      runs: options.runs,
      progress,
    })
    progress(`measured in ${seconds(started)}`)
    const report: VerifyReport = { ...input.about, ...figures }
    process.stdout.write(options.json ? `${reportJson(report)}\n` : reportText(report))
    return 0
  } catch (error) {
    if (error instanceof Stop) {
      console.error(`agentmarket: ${error.message}`)
      return error.exitCode
    }
    console.error(`agentmarket: bench verify failed: ${firstLine(error)}`)
    return 1
  } finally {
    input?.stop()
  }
}
