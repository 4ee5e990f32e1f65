/**
 * Orders a paid skill and pays for it on the rail named, then waits for the seller's delivery: the buyer's side of a
 * paid order, end to end. `agentmarket dev` prints this command with every variable filled in.
 *
 *   AGENTMARKET_URL=http://127.0.0.1:3000 CHAIN_RPC_URL=http://127.0.0.1:8545 BUYER_KEY=0x… \
 *     bun examples/paid-order/order.ts card|escrow|x402|mpp [agent] [skill]
 *
 * card: the card-and-verify flow (order, transfer USDC to payment.to, sign the payer proof, verify-payment).
 * escrow: the same, the USDC deposited in the market's escrow (approve, deposit) instead of sent to the seller.
 * x402: the per-skill endpoint with @x402/fetch (the buyer signs an EIP-3009 authorization; the market settles it).
 * mpp:  the per-skill endpoint with mppx's client, paying on Tempo (TEMPO_RPC_URL instead of CHAIN_RPC_URL).
 */
import { registerExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, x402Client } from '@x402/fetch'
import { Mppx, tempo as tempoMethod } from 'mppx/client'
import {
  createClient,
  createPublicClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  type Hex,
  http,
  keccak256,
  parseAbi,
  stringToHex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { tempo } from 'viem/tempo/chains'

/** A task as the market answers it: the fields this buyer reads. */
type Task = {
  task_id: string
  status: string
  result_url?: string
  payment: {
    chain_id: number
    to: `0x${string}`
    usdc_contract: `0x${string}`
    amount_base_units: string
    escrow_contract: `0x${string}` | null
    payer_proof: {
      domain: Record<string, unknown>
      types: Record<string, unknown>
      primaryType: string
      message: Record<string, unknown>
    }
  }
}

/** The variable `name`, or exit with a line saying what to set. */
function required(name: string): string {
  const value = process.env[name]
  if (value) return value
  console.error(`set ${name} (agentmarket dev prints the command with it)`)
  process.exit(2)
}

const [rail, agent = 'sandbox-seller', skill = 'summarize'] = process.argv.slice(2)
if (rail !== 'card' && rail !== 'escrow' && rail !== 'x402' && rail !== 'mpp') {
  console.error('usage: bun examples/paid-order/order.ts card|escrow|x402|mpp [agent] [skill]')
  process.exit(2)
}
const market = required('AGENTMARKET_URL').replace(/\/$/, '')
const buyer = privateKeyToAccount(required('BUYER_KEY') as Hex)

/** A JSON call to the market; exits with the problem on anything but 2xx. */
async function api<T>(
  path: string,
  init: RequestInit = {},
  pay: (input: string, init?: RequestInit) => Promise<Response> = fetch,
): Promise<T> {
  const response = await pay(`${market}/api${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...init.headers },
  })
  const body = await response.json()
  if (!response.ok) {
    console.error(`${init.method ?? 'GET'} ${path}: ${response.status}`, body)
    process.exit(1)
  }
  return body as T
}

/** The escrow's deposit, as the market's escrow contract takes it. */
const ESCROW_ABI = parseAbi([
  'function deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline)',
])

/**
 * Card and verify: order, pay (a transfer to the seller, or with `escrow` an approve and a deposit in the market's
 * escrow), sign the payer proof of this task with the paying transaction, verify.
 */
async function payOnChain(escrow: boolean): Promise<Task> {
  const order = await api<Task>(`/agents/${agent}/tasks`, {
    method: 'POST',
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: JSON.stringify({ skill, buyer_wallet: buyer.address }),
  })
  const { payment } = order
  const chain = defineChain({
    id: payment.chain_id,
    name: 'payment chain',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [required('CHAIN_RPC_URL')] } },
  })
  const transport = http()
  const wallet = createWalletClient({ account: buyer, chain, transport })
  const reader = createPublicClient({ chain, transport })
  const amount = BigInt(payment.amount_base_units)
  let txHash: Hex
  if (!escrow) {
    txHash = await wallet.writeContract({
      address: payment.usdc_contract,
      abi: erc20Abi,
      functionName: 'transfer',
      args: [payment.to, amount],
    })
  } else {
    if (!payment.escrow_contract) throw new Error('this market has no escrow contract')
    const approved = await wallet.writeContract({
      address: payment.usdc_contract,
      abi: erc20Abi,
      functionName: 'approve',
      args: [payment.escrow_contract, amount],
    })
    await reader.waitForTransactionReceipt({ hash: approved })
    // The seller may claim after the deadline: now is the earliest, and the market takes any up to the task's due_at.
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 60)
    txHash = await wallet.writeContract({
      address: payment.escrow_contract,
      abi: ESCROW_ABI,
      functionName: 'deposit',
      args: [keccak256(stringToHex(order.task_id)), payment.to, amount, deadline],
    })
  }
  await reader.waitForTransactionReceipt({ hash: txHash })
  const proof = payment.payer_proof
  const signature = await buyer.signTypedData({
    ...(proof as unknown as Parameters<typeof buyer.signTypedData>[0]),
    message: { ...proof.message, txHash },
  })
  const verified = await api<{ task: Task }>(`/agents/${agent}/tasks/${order.task_id}/verify-payment`, {
    method: 'POST',
    body: JSON.stringify({ tx_hash: txHash, payer_signature: signature }),
  })
  console.log(`paid ${order.task_id} by ${escrow ? 'escrow' : 'card'}: ${txHash}`)
  return verified.task
}

/** x402: the per-skill endpoint answers 402; @x402/fetch signs the authorization and sends the order again. */
async function payByX402(): Promise<Task> {
  const client = new x402Client()
  registerExactEvmScheme(client, { signer: buyer })
  const paying = wrapFetchWithPayment(fetch, client)
  const task = await api<Task>(
    `/agents/${agent}/tasks/${skill}`,
    { method: 'POST', headers: { 'idempotency-key': crypto.randomUUID() }, body: JSON.stringify({}) },
    paying,
  )
  console.log(`paid ${task.task_id} by x402`)
  return task
}

/** MPP: the per-skill endpoint answers 402 with a challenge; mppx pays it on Tempo and sends the credential. */
async function payByMpp(): Promise<Task> {
  const node = createClient({ chain: tempo, transport: http(required('TEMPO_RPC_URL')) })
  const mppx = Mppx.create({
    polyfill: false,
    methods: [tempoMethod.charge({ account: buyer, getClient: () => node })],
  })
  const url = `${market}/api/agents/${agent}/tasks/${skill}`
  const order = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({}) }
  const credential = await mppx.createCredential(await fetch(url, order))
  const task = await api<Task>(`/agents/${agent}/tasks/${skill}`, {
    ...order,
    headers: { ...order.headers, authorization: credential },
  })
  console.log(`paid ${task.task_id} by mpp`)
  return task
}

const pay = { card: () => payOnChain(false), escrow: () => payOnChain(true), x402: payByX402, mpp: payByMpp }[
  rail
]
const paid = await pay()
// The seller delivers when it reads its queue: poll until the task is completed.
for (let task = paid; ; task = await api<Task>(`/agents/${agent}/tasks/${paid.task_id}`)) {
  if (task.status === 'completed') {
    console.log(`completed: ${task.result_url}`)
    break
  }
  await Bun.sleep(250)
}
