export * from './adapters/viemChain.ts'
export * from './adapters/viemX402.ts'
