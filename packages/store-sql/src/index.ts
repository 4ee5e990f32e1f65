export { postgresSql, type SqlDialect, sqliteSql } from './dialect.ts'
export { type FairQueueTable, fairPick, QUEUES } from './fairQueue.ts'
export { type Dialect, type DialectKit, postgresKit, sqliteKit } from './kit.ts'
export { describeTables, type PostgresTables, type SqliteTables } from './schema.ts'
