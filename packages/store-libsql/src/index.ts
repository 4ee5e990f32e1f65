export { libsqlStore } from './libsqlStore.ts'
export { migrate } from './migrate.ts'
export { type Database, openDatabase, whileBusy } from './open.ts'
export { libsqlRateBuckets } from './rateBuckets.ts'
