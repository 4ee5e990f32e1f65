import {
  createWalletClient,
  decodeFunctionData,
  defineChain,
  type Hex,
  http,
  keccak256,
  parseAbi,
  stringToHex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { SandboxChain } from './sandboxChain.ts'

/** How often the seller's queue is read for deliveries to send on chain. */
const POLL_MS = 200

const SUBMIT_ABI = parseAbi(['function submit(bytes32 key, bytes32 deliverable)'])

/** A seller task as its queue lists it: the job escrow's offered calls, if any. */
type QueuedTask = { task_id: string; escrow_job?: { calls: { step: string; to: Hex; data: Hex }[] } | null }

/**
 * The sandbox seller's side of the job escrow: a job in escrow is delivered on chain, so once the seller has kept a
 * result (its `submit` call commits to it, not to the empty text) this sends that call from the seller's wallet. The
 * bot delivers through the API as any seller does; this is the step a seller with a wallet takes after it.
 * @example const stop = startJobSubmitter(baseUrl, seller, chain); … stop()
 */
export function startJobSubmitter(
  baseUrl: string,
  seller: { name: string; apiKey: string },
  chain: SandboxChain,
): () => void {
  const wallet = createWalletClient({
    account: privateKeyToAccount(chain.seller.privateKey),
    chain: defineChain({
      id: chain.chainId,
      name: 'sandbox',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    }),
    transport: http(chain.rpcUrl),
  })
  const sent = new Set<string>()
  // The market's submit call commits to the kept result, or to the empty text while none is kept.
  const nothingKept = keccak256(stringToHex(''))
  const submitDelivered = async () => {
    const response = await fetch(`${baseUrl}/api/agents/${seller.name}/tasks?status=paid`, {
      headers: { authorization: `Bearer ${seller.apiKey}` },
    })
    if (!response.ok) throw new Error(`the seller's queue answered ${response.status}`)
    const { tasks } = (await response.json()) as { tasks: QueuedTask[] }
    for (const task of tasks) {
      const submit = task.escrow_job?.calls.find((call) => call.step === 'submit')
      if (!submit || sent.has(task.task_id)) continue
      const { args } = decodeFunctionData({ abi: SUBMIT_ABI, data: submit.data })
      if (args[1] === nothingKept) continue
      sent.add(task.task_id)
      await wallet.sendTransaction({ to: submit.to, data: submit.data })
    }
  }
  let running = true
  let timer: ReturnType<typeof setTimeout> | undefined
  const loop = () => {
    if (!running) return
    submitDelivered()
      .catch((error: Error) => console.error(`sandbox seller (job escrow): ${error.message}`))
      .finally(() => {
        if (running) timer = setTimeout(loop, POLL_MS)
      })
  }
  loop()
  return () => {
    running = false
    clearTimeout(timer)
  }
}
