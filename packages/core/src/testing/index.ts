export * from './storeSuite.ts'
