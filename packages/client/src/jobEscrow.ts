import {
  type Address,
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  isAddressEqual,
  keccak256,
  parseAbi,
  stringToHex,
  zeroAddress,
} from 'viem'
import type { AgentmarketClient, WriteOptions } from './client.ts'
import { type PayingWallet, sentAndMined, verifyTransfer } from './transfer.ts'
import { checkedTemplate } from './typedData.ts'
import type { Task } from './types.ts'

/** The job escrow's calls a buyer sends (contracts/JobEscrow.sol; docs/jobs.md). */
const JOB_ESCROW_ABI = parseAbi([
  'function fund(bytes32 jobId, address provider, address evaluator, uint256 budget, uint64 deliverBy, uint64 reviewWindow)',
  'function submit(bytes32 key, bytes32 deliverable)',
  'function complete(bytes32 key, bytes32 reason)',
  'function reject(bytes32 key, bytes32 reason)',
  'function claimPayment(bytes32 key)',
])

/** One transaction a task's `escrow_job` offers. */
type JobCall = NonNullable<Task['escrow_job']>['calls'][number]

/** The served call of `step`, or an error naming what the task offers instead. */
function callOf(task: Task, step: JobCall['step']): { to: Address; data: Hex } {
  const call = task.escrow_job?.calls.find((offered) => offered.step === step)
  if (!call) throw new Error(`task ${task.task_id} offers no ${step} call on the job escrow (see its status)`)
  return { to: call.to as Address, data: call.data as Hex }
}

/**
 * The approve and fund calls a pending task offers, checked against the task before money moves: the approval is of
 * the task's USDC for the job escrow and the price; the funding is of the task's job id (keccak256 of its id), for
 * the seller, at the price, with the task's review window and the sender as evaluator. A market cannot make the
 * wallet fund another job, another seller or another amount.
 */
function checkedFunding(task: Task, wallet: PayingWallet) {
  const { payment, escrow_job: job } = task
  if (task.status !== 'pending_payment')
    throw new Error(`task ${task.task_id} is ${task.status}, not pending_payment`)
  if (!job) throw new Error(`the market takes no job escrow funding for task ${task.task_id}`)
  if (!payment.to) throw new Error(`task ${task.task_id} names no seller wallet`)
  checkedTemplate('PaymentClaim', payment.payer_proof, { agent: task.agent, task: task.task_id })
  if (wallet.chain.id !== payment.chain_id)
    throw new Error(
      `the wallet is on chain ${wallet.chain.id}; task ${task.task_id} is paid on chain ${payment.chain_id}`,
    )
  const contract = job.contract as Address
  const price = BigInt(payment.amount_base_units)
  const approve = callOf(task, 'approve')
  const approved = decodeFunctionData({ abi: erc20Abi, data: approve.data })
  const approvalHolds =
    isAddressEqual(approve.to, payment.usdc_contract as Address) &&
    approved.functionName === 'approve' &&
    isAddressEqual(approved.args[0], contract) &&
    approved.args[1] === price
  if (!approvalHolds)
    throw new Error(`the approve call of task ${task.task_id} is not of its price for its job escrow`)
  const fund = callOf(task, 'fund')
  const funded = decodeFunctionData({ abi: JOB_ESCROW_ABI, data: fund.data })
  if (funded.functionName !== 'fund' || !isAddressEqual(fund.to, contract))
    throw new Error(`the fund call of task ${task.task_id} is not the job escrow's fund`)
  const [jobId, provider, evaluator, budget, , reviewWindow] = funded.args
  const termsHold =
    jobId === keccak256(stringToHex(task.task_id)) &&
    jobId === job.job_id &&
    isAddressEqual(provider, payment.to as Address) &&
    (isAddressEqual(evaluator, zeroAddress) || isAddressEqual(evaluator, wallet.account.address)) &&
    budget === price &&
    reviewWindow === BigInt(task.review_seconds)
  if (!termsHold)
    throw new Error(
      `the fund call of task ${task.task_id} names another job, seller, price, evaluator or review window`,
    )
  return { approve, fund }
}

/**
 * Pays a `pending_payment` task through the market's job escrow: sends the approve and fund calls its `escrow_job`
 * offers (checked first), then waits for the market to see the funding when the order named this wallet as
 * `buyer_wallet` (the market pays such a task by itself), else signs the PaymentClaim for the funding and verifies.
 * The wait has no end of its own (a funding the market does not count leaves the task unpaid): bound it with
 * `options.signal`.
 */
export async function payTaskByJob(
  client: AgentmarketClient,
  task: Task,
  wallet: PayingWallet,
  options: WriteOptions = {},
): Promise<Task> {
  const { approve, fund } = checkedFunding(task, wallet)
  // The funding spends the allowance: its gas is estimated only once the approval is mined.
  await sentAndMined(wallet, approve)
  const funding = await sentAndMined(wallet, fund)
  const named =
    task.buyer_wallet !== null && isAddressEqual(task.buyer_wallet as Address, wallet.account.address)
  if (!named) return (await verifyTransfer(client, task, funding, wallet, options)) as Task
  return client.waitForTask(task.agent, task.task_id, {
    signal: options.signal,
    intervalMs: 250,
    until: (read) => read.status !== 'pending_payment',
  })
}

/**
 * Accepts (`complete`) or rejects a delivered job in escrow on chain from the evaluator's wallet, the reason as the
 * contract takes it (its keccak256), then waits for the market to read the decision (completed or rejected). A job
 * with no review window takes no decision: accepting it sends `claimPayment`, which pays the seller at once.
 */
export async function reviewJob(
  client: AgentmarketClient,
  task: Task,
  decision: 'accept' | 'reject',
  wallet: PayingWallet,
  reason: string,
  options: WriteOptions = {},
): Promise<Task> {
  const job = task.escrow_job
  const step = decision === 'accept' ? 'complete' : 'reject'
  if (!job?.key) throw new Error(`task ${task.task_id} has no funded job to decide`)
  const key = job.key as Hex
  const contract = job.contract as Address
  const data =
    decision === 'accept' && job.review_seconds === 0
      ? encodeFunctionData({ abi: JOB_ESCROW_ABI, functionName: 'claimPayment', args: [key] })
      : decisionData(task, step, wallet, reason)
  await sentAndMined(wallet, { to: contract, data })
  const settled = decision === 'accept' ? 'completed' : 'rejected'
  return client.waitForTask(task.agent, task.task_id, {
    signal: options.signal,
    intervalMs: 250,
    until: (read) => read.status === settled,
  })
}

/** The evaluator's `complete` or `reject` of the task's job, once the task offers it and the wallet is its evaluator. */
function decisionData(task: Task, step: 'complete' | 'reject', wallet: PayingWallet, reason: string): Hex {
  const job = task.escrow_job
  callOf(task, step)
  if (!job?.key || !job.evaluator || !isAddressEqual(job.evaluator as Address, wallet.account.address))
    throw new Error(
      `the job of task ${task.task_id} is decided by ${job?.evaluator}, not ${wallet.account.address}`,
    )
  return encodeFunctionData({
    abi: JOB_ESCROW_ABI,
    functionName: step,
    args: [job.key as Hex, keccak256(stringToHex(reason))],
  })
}

/**
 * Sends the `submit` call a seller's delivery of a job in escrow answers, once checked to commit the chain to the
 * delivered `resultUrl` (its keccak256): the task shows the result once the market reads the submission. Null
 * (nothing sent) for a task with no job in escrow.
 */
export async function submitJob(
  task: { task_id: string; escrow_job: Task['escrow_job'] },
  resultUrl: string,
  wallet: PayingWallet,
): Promise<Hex | null> {
  const call = task.escrow_job?.calls.find((offered) => offered.step === 'submit')
  if (!call) return null
  const submitted = decodeFunctionData({ abi: JOB_ESCROW_ABI, data: call.data as Hex })
  if (submitted.functionName !== 'submit' || submitted.args[1] !== keccak256(stringToHex(resultUrl)))
    throw new Error(`the submit call of task ${task.task_id} does not commit to ${resultUrl}`)
  return sentAndMined(wallet, { to: call.to as Address, data: call.data as Hex })
}
