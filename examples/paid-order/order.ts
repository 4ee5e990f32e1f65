/**
 * Orders a paid skill and pays for it on the rail named, then waits for the seller's delivery: the buyer's side of a
 * paid order, end to end, with @agentmarket/client. `agentmarket dev` prints this command with every variable filled.
 *
 *   AGENTMARKET_URL=http://127.0.0.1:3000 CHAIN_RPC_URL=http://127.0.0.1:8545 BUYER_KEY=0x… \
 *     bun examples/paid-order/order.ts card|escrow|job|x402|mpp [agent] [skill]
 *
 * card: card-and-verify (order, transfer USDC to payment.to, sign the payer proof, verify-payment).
 * escrow: the same, the USDC deposited in the market's escrow (approve, deposit) instead of sent to the seller.
 * job: the job escrow (approve, fund: the task's escrow_job.calls); the market pays the task when it sees the funding,
 *      and once the seller submitted the buyer accepts on chain (the job's complete, or claimPayment without a review).
 * x402: the per-skill endpoint through @x402/fetch (the buyer signs an EIP-3009 authorization; the market settles it).
 * mpp:  the per-skill endpoint through mppx, paying on Tempo (TEMPO_RPC_URL instead of CHAIN_RPC_URL).
 */
import { type AgentmarketClient, createClient, type Task } from '@agentmarket/client'
import { createClient as createViemClient, createWalletClient, defineChain, type Hex, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { tempo } from 'viem/tempo/chains'

/** The variable `name`, or exit with a line saying what to set. */
function required(name: string): string {
  const value = process.env[name]
  if (value) return value
  console.error(`set ${name} (agentmarket dev prints the command with it)`)
  process.exit(2)
}

const RAILS = ['card', 'escrow', 'job', 'x402', 'mpp'] as const
const [rail, agent = 'sandbox-seller', skill = 'summarize'] = process.argv.slice(2)
if (!RAILS.includes(rail as (typeof RAILS)[number])) {
  console.error(`usage: bun examples/paid-order/order.ts ${RAILS.join('|')} [agent] [skill]`)
  process.exit(2)
}
const market = createClient({ baseUrl: required('AGENTMARKET_URL') })
const account = privateKeyToAccount(required('BUYER_KEY') as Hex)

/** A wallet of the buyer's on the chain `order` is paid on (CHAIN_RPC_URL). */
function walletOn(order: { payment: { chain_id: number } }) {
  const chain = defineChain({
    id: order.payment.chain_id,
    name: 'payment chain',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [required('CHAIN_RPC_URL')] } },
  })
  return createWalletClient({ account, chain, transport: http() })
}

/** Card and verify, or escrow-first: order, then the client pays from a wallet on the task's chain and verifies. */
async function payOnChain(client: AgentmarketClient, escrow: boolean): Promise<string> {
  const order = await client.order(agent, { skill, buyer_wallet: account.address })
  const wallet = walletOn(order)
  const paid = escrow ? await client.payTaskByEscrow(order, wallet) : await client.payTask(order, wallet)
  return paid.task_id
}

/** The job escrow: fund the job the order offers, wait for the delivery, accept it on chain: the completed task. */
async function payByJob(client: AgentmarketClient): Promise<Task> {
  const order = await client.order(agent, { skill, buyer_wallet: account.address })
  const wallet = walletOn(order)
  const paid = await client.payTaskByJob(order, wallet)
  console.log(`paid ${paid.task_id} by job`)
  const delivered = await client.waitForTask(agent, paid.task_id, { intervalMs: 250 })
  return delivered.status === 'delivered' ? client.review(delivered, 'accept', wallet) : delivered
}

/** The per-skill endpoint's 402, paid by x402 or MPP: the client answers it and the order comes back paid. */
async function payOn402(client: AgentmarketClient, by: 'x402' | 'mpp'): Promise<string> {
  if (by === 'x402') return (await client.orderWithX402(agent, skill, {}, { account })).task.task_id
  const node = createViemClient({ chain: tempo, transport: http(required('TEMPO_RPC_URL')) })
  const paid = await client.orderWithMpp(agent, skill, {}, { tempo: { account, getClient: () => node } })
  return paid.task.task_id
}

if (rail === 'job') {
  const done = await payByJob(market)
  console.log(`${done.status}: ${done.result_url}`)
} else {
  const id =
    rail === 'card' || rail === 'escrow'
      ? await payOnChain(market, rail === 'escrow')
      : await payOn402(market, rail as 'x402' | 'mpp')
  console.log(`paid ${id} by ${rail}`)
  // The seller delivers when it reads its queue.
  const done = await market.waitForTask(agent, id, { intervalMs: 250 })
  console.log(`${done.status}: ${done.result_url}`)
}
