export { LOCK_WAIT_MS } from './connection.ts'
export { libsqlStore } from './libsqlStore.ts'
export { applyMigrations, type MigrationReport, migrate } from './migrate.ts'
export {
  type Database,
  DatabaseLockedError,
  DEFAULT_LOCK_WAIT_MS,
  type LockWait,
  openDatabase,
  whileBusy,
} from './open.ts'
export { libsqlRateBuckets } from './rateBuckets.ts'
