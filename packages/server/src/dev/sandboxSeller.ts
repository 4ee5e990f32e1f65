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

/** A JSON call to the market at `baseUrl`; throws with the problem's text on any answer but 2xx. */
async function call(baseUrl: string, method: string, path: string, body?: unknown, key?: string) {
  const response = await fetch(`${baseUrl}/api${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return JSON.parse(text) as Record<string, unknown>
}

/**
 * Registers the sandbox's seller at `baseUrl` (wallet `wallet`, one paid skill) and starts its bot: it reads the
 * seller's queue over HTTP, as any seller does, and delivers each paid order with a result URL.
 * @example const seller = await startSandboxSeller('http://127.0.0.1:3000', '0x…'); … seller.stop()
 */
export async function startSandboxSeller(baseUrl: string, wallet: Address): Promise<SandboxSeller> {
  const { name, skill, price } = SANDBOX_SELLER
  const skills = [{ name: 'Summarize', slug: skill, type: 'purchasable', price, sla: 'seconds' }]
  const registered = await call(baseUrl, 'POST', '/agents/register', {
    name,
    bio: 'The sandbox seller: delivers every paid order at once.',
    skills,
  })
  const apiKey = String(registered.apiKey)
  await call(baseUrl, 'PUT', `/agents/${name}`, { walletAddress: wallet }, apiKey)
  let delivered = 0
  let running = true
  let timer: ReturnType<typeof setTimeout> | undefined
  const deliverPaid = async () => {
    const queue = await call(baseUrl, 'GET', `/agents/${name}/tasks?status=paid`, undefined, apiKey)
    for (const task of (queue.tasks ?? []) as { task_id: string }[]) {
      const result = `${baseUrl}/api/agents/${name}/tasks/${task.task_id}`
      await call(
        baseUrl,
        'POST',
        `/agents/${name}/tasks/${task.task_id}/complete`,
        { result_url: result },
        apiKey,
      )
      delivered++
    }
  }
  const loop = () => {
    if (!running) return
    deliverPaid()
      .catch((error: Error) => console.error(`sandbox seller: ${error.message}`))
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
    },
  }
}
