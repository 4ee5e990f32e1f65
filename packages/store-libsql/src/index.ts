export { libsqlStore } from './libsqlStore.ts'
export { applyMigrations, type MigrationReport, migrate } from './migrate.ts'
export { type Database, openDatabase, whileBusy } from './open.ts'
export { libsqlRateBuckets } from './rateBuckets.ts'
