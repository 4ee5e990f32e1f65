export { applyMigrations, type MigrationReport } from './migrate.ts'
export { openPostgres, type PostgresDatabase, type PostgresOptions } from './open.ts'
export { postgresStore } from './postgresStore.ts'
export { postgresRateBuckets } from './rateBuckets.ts'
