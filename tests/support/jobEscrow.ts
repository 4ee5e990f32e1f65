import { type Address, decodeFunctionData, encodeFunctionData, type Hex } from 'viem'
import { JOB_ESCROW_ABI } from '../../packages/core/src/payments/JobEscrow.ts'

/** The arguments of JobEscrow's fund call a test may change (the review window stays as offered). */
export type FundArgs = {
  jobId: Hex
  provider: Address
  evaluator: Address
  budget: bigint
  deliverBy: bigint
}

/** The calldata of the fund call `data` with the arguments in `change` replaced, as a buyer or a copier would send. */
export function changedFundData(data: Hex, change: Partial<FundArgs>): Hex {
  const { args } = decodeFunctionData({ abi: JOB_ESCROW_ABI, data })
  const [jobId, provider, evaluator, budget, deliverBy, review] = args as unknown as [
    Hex,
    Address,
    Address,
    bigint,
    bigint,
    bigint,
  ]
  return encodeFunctionData({
    abi: JOB_ESCROW_ABI,
    functionName: 'fund',
    args: [
      change.jobId ?? jobId,
      change.provider ?? provider,
      change.evaluator ?? evaluator,
      change.budget ?? budget,
      change.deliverBy ?? deliverBy,
      review,
    ],
  })
}
