export { boundedStore, type CallDeadlines, classifyPostgresFault } from './faults.ts'
export { feedSequencer } from './feedSequencer.ts'
export { applyMigrations, type MigrationReport } from './migrate.ts'
export {
  openPostgres,
  POOL_TIMEOUTS,
  type PoolTimeouts,
  type PostgresDatabase,
  type PostgresOptions,
} from './open.ts'
export { CALL_DEADLINES, postgresStore } from './postgresStore.ts'
export type { DeadlineTimer } from './progress.ts'
export { postgresRateBuckets } from './rateBuckets.ts'
