export * from './rateBucketsSuite.ts'
export * from './storeSuite.ts'
