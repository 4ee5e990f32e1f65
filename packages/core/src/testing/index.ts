// @agentmarket/core/testing: the conformance suites every Store and RateBuckets adapter passes, their sample
// records, and the trust simulation the stores' trust tests share.

export { sampleAgent, sampleEvent, sampleSkill, sampleTask, sampleUser } from './fixtures.ts'
export { kvBucketMove } from './kvBucketMove.ts'
export { rateBucketsSuite } from './rateBucketsSuite.ts'
export { storeSuite, type TestRunner } from './storeSuite.ts'
export {
  creditCountsAtSteps,
  DAY_MS,
  establishedBuyers,
  simWallet,
  type TrustMarket,
  trustMarket,
  USDC,
} from './trustSimulation.ts'
