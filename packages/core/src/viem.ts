export * from './adapters/viemChain.ts'
