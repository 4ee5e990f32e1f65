// @agentmarket/core/viem: the adapters over viem, the one chain client the core ships.

export { budgetedTransport } from './adapters/budgetedTransport.ts'
export { type ViemChainOptions, viemChain } from './adapters/viemChain.ts'
export { type ViemX402Options, viemX402Facilitator } from './adapters/viemX402.ts'
