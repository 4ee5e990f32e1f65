import { type AgentmarketClient, createClient, type PayingWallet } from '@agentmarket/client'
import { createWalletClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { type SandboxChain, viemChainOf } from './sandboxChain.ts'

/** The sandbox's seller agent: its name, skill and API key, and how many orders its bot delivered. */
export type SandboxSeller = {
  name: string
  skill: string
  /** USDC, in currency units. */
  price: number
  apiKey: string
  delivered(): number
  stop(): void
}

/** The seller's name and its one paid skill. */
export const SANDBOX_SELLER = { name: 'sandbox-seller', skill: 'summarize', price: 1 } as const

/** How often the bot reads its queue. */
const POLL_MS = 200

/** The seller's wallet on the sandbox chain: where buyers pay, and what submits a job in escrow. */
function sellerWallet(chain: SandboxChain): PayingWallet {
  return createWalletClient({
    account: privateKeyToAccount(chain.seller.privateKey),
    chain: viemChainOf(chain),
    transport: http(chain.rpcUrl),
  })
}

/**
 * Delivers each paid task of the seller's queue with its own address as the result, calling `onDelivered` for each;
 * a job in escrow is also submitted on chain from `wallet` (the client sends the call the market offers). A job stays
 * in the paid queue until the market sees its submit on chain, so what was delivered (`done`) is not delivered again.
 */
async function deliverPaid(
  seller: AgentmarketClient,
  baseUrl: string,
  wallet: PayingWallet,
  done: Set<string>,
  onDelivered: () => void,
) {
  const { name } = SANDBOX_SELLER
  const queue = await seller.queue(name, { status: 'paid' })
  for (const task of queue.tasks) {
    if (!('task_id' in task) || done.has(task.task_id)) continue
    await seller.deliver(name, task.task_id, `${baseUrl}/api/agents/${name}/tasks/${task.task_id}`, {
      wallet,
    })
    done.add(task.task_id)
    onDelivered()
  }
}

/**
 * Registers the sandbox's seller at `baseUrl` (the chain's seller wallet, one paid skill) and starts its bot with
 * @agentmarket/client, as any seller runs one: it beats, reads its queue and delivers each paid order with a result URL
 * (a job in escrow submitted on chain too).
 * @example const seller = await startSandboxSeller('http://127.0.0.1:3000', chain); … seller.stop()
 */
export async function startSandboxSeller(baseUrl: string, chain: SandboxChain): Promise<SandboxSeller> {
  const { name, skill, price } = SANDBOX_SELLER
  const wallet = sellerWallet(chain)
  const market = createClient({ baseUrl })
  const { apiKey } = await market.register({
    name,
    bio: 'The sandbox seller: delivers every paid order at once.',
    skills: [{ name: 'Summarize', slug: skill, type: 'purchasable', price, sla: 'seconds' }],
    walletAddress: wallet.account.address,
  })
  const seller = market.withApiKey(apiKey)
  const report = (error: unknown) =>
    console.error(`sandbox seller: ${error instanceof Error ? error.message : String(error)}`)
  const stopBeating = seller.startHeartbeat(name, { onError: report })
  let delivered = 0
  const done = new Set<string>()
  let running = true
  let timer: ReturnType<typeof setTimeout> | undefined
  const loop = () => {
    if (!running) return
    deliverPaid(seller, baseUrl, wallet, done, () => delivered++)
      .catch(report)
      .finally(() => {
        if (running) timer = setTimeout(loop, POLL_MS)
      })
  }
  loop()
  return {
    name,
    skill,
    price,
    apiKey,
    delivered: () => delivered,
    stop() {
      running = false
      clearTimeout(timer)
      stopBeating()
    },
  }
}
