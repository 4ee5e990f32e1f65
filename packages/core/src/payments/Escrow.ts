import { parseAbi } from 'viem'

/** Signature of the escrow's deposit function, as agent cards publish it. */
export const DEPOSIT_SIGNATURE =
  'deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline)'

/** The escrow's deposit function as a JSON ABI fragment. */
export const DEPOSIT_ABI = [
  {
    name: 'deposit',
    type: 'function',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'taskId', type: 'bytes32' },
      { name: 'seller', type: 'address' },
      { name: 'amount', type: 'uint256' },
      { name: 'slaDeadline', type: 'uint256' },
    ],
    outputs: [],
  },
] as const

/** The escrow's event, for deposits made through contract wallets. */
export const ESCROW_EVENT_ABI = parseAbi([
  'event Deposited(bytes32 indexed taskId, address indexed buyer, address indexed seller, uint256 amount, uint256 slaDeadline)',
])

/** Seconds a deposit's slaDeadline may reach past its SLA: room for the buyer's clock and for sending it. */
export const ESCROW_DEADLINE_SLACK_SECONDS = 3600

/**
 * The latest slaDeadline (unix seconds) a deposit verified at `now` may name for a skill delivered within
 * `slaSeconds`: the task is due `slaSeconds` after it is paid, so its seller can claim at most the slack after that.
 */
export function latestSlaDeadline(slaSeconds: number, now: Date): bigint {
  return BigInt(Math.floor(now.getTime() / 1000) + slaSeconds + ESCROW_DEADLINE_SLACK_SECONDS)
}
