import { type AgentmarketClient, createClient } from '@agentmarket/client'
import type { Address } from 'viem'

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

/** Delivers each paid task of the seller's queue with its own address as the result, calling `onDelivered` for each. */
async function deliverPaid(seller: AgentmarketClient, baseUrl: string, onDelivered: () => void) {
  const { name } = SANDBOX_SELLER
  const queue = await seller.queue(name, { status: 'paid' })
  for (const task of queue.tasks) {
    if (!('task_id' in task)) continue
    await seller.deliver(name, task.task_id, `${baseUrl}/api/agents/${name}/tasks/${task.task_id}`)
    onDelivered()
  }
}

/**
 * Registers the sandbox's seller at `baseUrl` (wallet `wallet`, one paid skill) and starts its bot with
 * @agentmarket/client, as any seller runs one: it beats, reads its queue and delivers each paid order with a result URL.
 * @example const seller = await startSandboxSeller('http://127.0.0.1:3000', '0x…'); … seller.stop()
 */
export async function startSandboxSeller(baseUrl: string, wallet: Address): Promise<SandboxSeller> {
  const { name, skill, price } = SANDBOX_SELLER
  const market = createClient({ baseUrl })
  const { apiKey } = await market.register({
    name,
    bio: 'The sandbox seller: delivers every paid order at once.',
    skills: [{ name: 'Summarize', slug: skill, type: 'purchasable', price, sla: 'seconds' }],
    walletAddress: wallet,
  })
  const seller = market.withApiKey(apiKey)
  const report = (error: unknown) =>
    console.error(`sandbox seller: ${error instanceof Error ? error.message : String(error)}`)
  const stopBeating = seller.startHeartbeat(name, { onError: report })
  let delivered = 0
  let running = true
  let timer: ReturnType<typeof setTimeout> | undefined
  const loop = () => {
    if (!running) return
    deliverPaid(seller, baseUrl, () => delivered++)
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
