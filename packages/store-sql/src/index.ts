export { type Dialect, type DialectKit, postgresKit, sqliteKit } from './kit.ts'
export { describeTables, type PostgresTables, type SqliteTables } from './schema.ts'
