import type { Address } from 'viem'
import { chainName, type MarketConfig } from './Config.ts'
import { DEFAULT_JOB_SECONDS } from './Job.ts'
import { formatAmount } from './Money.ts'
import { ESCROW_DEADLINE_SLACK_SECONDS } from './payments/Escrow.ts'
import type { TaskRecord } from './Task.ts'

// What a buyer does next with a task, in words with real paths: the task's documents and order e-mails tell it.

/** The four texts that tell a buyer what to do next. */
export type NextSteps = { pay: string; verify: string; verify_body: string; check_status: string }

/** The URL of a task on the wire. */
function taskUrl(baseUrl: string, task: Pick<TaskRecord, 'agentName' | 'id'>): string {
  return `${baseUrl}/api/agents/${encodeURIComponent(task.agentName)}/tasks/${task.id}`
}

/** The paths of a task's actions. */
export function taskPaths(baseUrl: string, task: Pick<TaskRecord, 'agentName' | 'id'>) {
  return actionPaths(taskUrl(baseUrl, task))
}

/** The paths of the actions of the task at `self`. */
function actionPaths(self: string) {
  return {
    self,
    verify: `${self}/verify-payment`,
    complete: `${self}/complete`,
    accept: `${self}/accept`,
    reject: `${self}/reject`,
  }
}

/**
 * What a buyer polling the task at `self` does next: decide a delivery under review, else wait for `completed`. Every
 * poll of a task shapes it: the texts of a delivery are made only for one.
 */
function checkStatusStep(task: TaskRecord, self: string): string {
  if (task.status !== 'delivered') return `GET ${self} until status is "completed", then read result_url.`
  const { accept, reject } = actionPaths(self)
  const decide = `POST ${accept} or ${reject} (with a reason) signed by the paying wallet before review_until; silence accepts.`
  if (task.reveal === 'on_delivery') return `Read result_url, then ${decide}`
  return `The seller reveals result_url only once the task is completed (accepted, or silence past review_until), never after a rejection; result_commitment is its keccak256. ${decide}`
}

/** The escrow-first way to pay `task`, with the deadline its deposit must name (the seller claims after it). */
function escrowStep(task: TaskRecord, usdcContract: Address, escrowContract: Address): string {
  const sla = task.slaSeconds ?? DEFAULT_JOB_SECONDS
  return ` Or escrow-first: approve ${usdcContract} for ${escrowContract}, then call deposit(taskId, ${task.payTo}, ${task.priceBaseUnits}, slaDeadline) on ${escrowContract}, slaDeadline being the unix time you send it plus ${sla} (the SLA in seconds): a deadline later than ${sla + ESCROW_DEADLINE_SLACK_SECONDS} seconds after the market verifies the deposit pays nothing.`
}

/** What the buyer does next, with real paths. */
export function nextSteps(task: TaskRecord, config: MarketConfig): NextSteps {
  const self = taskUrl(config.baseUrl, task)
  const check_status = checkStatusStep(task, self)
  if (task.priceBaseUnits === 0n || !task.payTo) {
    return {
      pay: 'Nothing to pay: this skill is free.',
      verify: 'Nothing to verify: the task is already paid.',
      verify_body: '{}',
      check_status,
    }
  }
  // Paid (or delivered) tasks ask for nothing more; an expired one is not paid again.
  if (task.status !== 'pending_payment') {
    const done = task.status === 'expired' ? 'the task expired unpaid; order again' : 'the task is paid'
    return {
      pay: `Nothing to pay: ${done}.`,
      verify: `Nothing to verify: ${done}.`,
      verify_body: '{}',
      check_status,
    }
  }
  // A payment sent and not yet decided (its confirmations, or a settlement whose answer was lost): never ask again.
  if (task.pendingCheck) {
    const sent = `a payment of this task is under way (transaction ${task.pendingCheck.txHash})`
    return {
      pay: `Nothing to pay now: ${sent}; do not pay again. GET ${self} until status is "paid".`,
      verify: `Nothing to verify: ${sent} and the market re-checks it by itself.`,
      verify_body: '{}',
      check_status,
    }
  }
  const amount = formatAmount(task.priceBaseUnits)
  const { chainId, usdcContract, escrowContract } = config.chain
  const escrow = escrowContract ? escrowStep(task, usdcContract, escrowContract) : ''
  const deadline = task.expiresAt ? ` before ${task.expiresAt.toISOString()}` : ''
  return {
    pay: `Send ${amount} USDC (${task.priceBaseUnits} base units of token ${usdcContract}) on ${chainName(chainId)} (chain id ${chainId}) to ${task.payTo}${deadline}.${escrow} Then sign payment.payer_proof (EIP-712) with the wallet that paid, its message.txHash set to your transaction hash: only that signature lets your payment pay this task.`,
    verify: `POST ${actionPaths(self).verify}`,
    verify_body:
      '{"tx_hash": "0x<hash of your payment transaction>", "payer_signature": "0x<EIP-712 signature of payment.payer_proof by the paying wallet>"}',
    check_status,
  }
}
