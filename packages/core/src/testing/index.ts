export * from './rateBucketsSuite.ts'
export * from './storeSuite.ts'
export * from './trustSimulation.ts'
