import {
  type Account,
  type Address,
  type Chain,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  keccak256,
  parseAbi,
  publicActions,
  type Transport,
  toBytes,
  type WalletClient,
} from 'viem'
import type { AgentmarketClient, WriteOptions } from './client.ts'
import { AgentmarketError } from './errors.ts'
import { sleep } from './fetching.ts'
import { checkedTemplate, signServed } from './typedData.ts'
import type { PaymentVerified, Task } from './types.ts'

/** A wallet that sends the USDC transfer and signs its PaymentClaim: a viem wallet client with an account and chain. */
export type PayingWallet = WalletClient<Transport, Chain, Account>

/** The task a verified payment answers. */
export type PaidTask = PaymentVerified['task']

/** Sends `call` from the wallet and waits for its block: the transaction's hash; throws when it reverted. */
export async function sentAndMined(wallet: PayingWallet, call: { to: Address; data: Hex }): Promise<Hex> {
  const hash = await wallet.sendTransaction({ ...call, account: wallet.account, chain: wallet.chain })
  const receipt = await wallet.extend(publicActions).waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`)
  return hash
}

/**
 * The card-and-verify payment a pending task asks for: amount, token and recipient, checked before money moves,
 * with the PaymentClaim the wallet will sign for it (a claim of another task would leave the money unclaimable).
 */
function paymentOf(task: Task, wallet: PayingWallet) {
  const { payment } = task
  if (task.status !== 'pending_payment')
    throw new Error(`task ${task.task_id} is ${task.status}, not pending_payment`)
  if (!payment.to) throw new Error(`task ${task.task_id} names no wallet to pay`)
  checkedTemplate('PaymentClaim', payment.payer_proof, { agent: task.agent, task: task.task_id })
  if (wallet.chain.id !== payment.chain_id)
    throw new Error(
      `the wallet is on chain ${wallet.chain.id}; task ${task.task_id} is paid on chain ${payment.chain_id}`,
    )
  return {
    token: payment.usdc_contract as Address,
    to: payment.to as Address,
    amount: BigInt(payment.amount_base_units),
  }
}

/**
 * Sends the USDC transfer, then verify-payment with the PaymentClaim signature until the market counts it.
 * Sending nothing twice: a verify answered 202 (not final yet) or refused with a Retry-After is asked again with
 * the same transaction, never a new transfer.
 */
export async function payTask(
  client: AgentmarketClient,
  task: Task,
  wallet: PayingWallet,
  options: WriteOptions = {},
): Promise<PaidTask> {
  const { token, to, amount } = paymentOf(task, wallet)
  const txHash = await wallet.writeContract({
    address: token,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [to, amount],
    account: wallet.account,
    chain: wallet.chain,
  })
  return verifyTransfer(client, task, txHash, wallet, options)
}

/**
 * Signs the task's PaymentClaim for `txHash` with the paying wallet and verifies until paid: while the payment is not
 * final (202) it asks again after 1 s, doubling up to 15 s; a refusal with a Retry-After after that. Stop it with
 * `options.signal` (the market keeps a 202's hash and marks the task paid once final: never pay again).
 */
export async function verifyTransfer(
  client: AgentmarketClient,
  task: Task,
  txHash: Hex,
  wallet: PayingWallet,
  options: WriteOptions = {},
): Promise<PaidTask> {
  const expected = { agent: task.agent, task: task.task_id }
  const payerSignature = await signServed(wallet, 'PaymentClaim', task.payment.payer_proof, expected, {
    txHash,
  })
  const body = { tx_hash: txHash, payer_signature: payerSignature }
  let pending = 1
  for (;;) {
    const answer = await client
      .verifyPayment(task.agent, task.task_id, body, options)
      .catch((error: unknown) => {
        // chain_unavailable and the like: the market kept the hash; asking again is safe.
        if (error instanceof AgentmarketError && error.retryAfter !== null) return error
        throw error
      })
    if (!(answer instanceof AgentmarketError) && answer.verified) return answer.task
    const seconds = answer instanceof AgentmarketError ? (answer.retryAfter ?? 1) : pending
    if (!(answer instanceof AgentmarketError)) pending = Math.min(15, pending * 2)
    await sleep(seconds * 1000, options.signal)
  }
}

/** The escrow's deposit, as SPEC gives its ABI. */
const ESCROW_DEPOSIT_ABI = parseAbi([
  'function deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline)',
])

/** A job's time without an SLA, as the market counts it (24 hours). */
const DEFAULT_SLA_SECONDS = 86_400

/**
 * Pays a `pending_payment` task escrow-first: approves the escrow for the price, deposits it naming the seller and a
 * deadline of now plus the task's SLA (the seller may claim after it), signs the PaymentClaim for the deposit and
 * verifies until the market counts it. The deposit's taskId is keccak256 of the task id, so a second try of the
 * same task reverts (the escrow refuses a buyer's taskId twice) rather than paying again.
 */
export async function payTaskByEscrow(
  client: AgentmarketClient,
  task: Task,
  wallet: PayingWallet,
  options: WriteOptions = {},
): Promise<PaidTask> {
  const { token, to, amount } = paymentOf(task, wallet)
  const escrow = task.payment.escrow_contract as Address | null
  if (!escrow) throw new Error(`the market takes no escrow deposit for task ${task.task_id}`)
  // The deposit spends the allowance: its gas is estimated only once the approval is mined.
  await sentAndMined(wallet, {
    to: token,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [escrow, amount] }),
  })
  const sla = BigInt(task.sla_seconds ?? DEFAULT_SLA_SECONDS)
  const deposit = await wallet.writeContract({
    address: escrow,
    abi: ESCROW_DEPOSIT_ABI,
    functionName: 'deposit',
    args: [keccak256(toBytes(task.task_id)), to, amount, BigInt(Math.floor(Date.now() / 1000)) + sla],
    account: wallet.account,
    chain: wallet.chain,
  })
  return verifyTransfer(client, task, deposit, wallet, options)
}
