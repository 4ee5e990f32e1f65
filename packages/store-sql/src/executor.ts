import type { Column, SQL, Table } from 'drizzle-orm'
import type { SelectResultFields } from 'drizzle-orm/query-builders/select.types'
import type { SqlDialect } from './dialect.ts'
import type { PostgresTables, SqliteTables } from './schema.ts'

/** Either store's tables, as the queries written once read their columns. */
export type Tables = SqliteTables | PostgresTables

/** A table by its name in the description (schema.ts). */
export type TableName = keyof SqliteTables

/** A row of a table, as both stores read it (core rows/). */
export type RowOf<Name extends TableName> = SqliteTables[Name]['$inferSelect']

/** The columns an update sets: a value, or SQL over the row (`count + 1`). */
export type SetOf<Name extends TableName> = {
  [Column in keyof SqliteTables[Name]['$inferInsert']]?: SqliteTables[Name]['$inferInsert'][Column] | SQL
}

/** What a read selects: columns, SQL expressions and whole tables' rows by the names the rows carry them under. */
export type Fields = Record<string, Column | SQL | SQL.Aliased | Table>

/** The rows `Selected` reads, typed by its fields. */
export type RowsOf<Selected extends Fields> = SelectResultFields<Selected>[]

/**
 * A read described as data: the rows of `from` (inner-joined with `join` when given) that `where` selects, grouped by
 * `groupBy`, in `orderBy`, `limit` of them after `offset`. Each store's executor builds it on its own driver.
 */
export type Query<Name extends TableName> = {
  from: Name
  join?: { table: TableName; on: SQL }
  where?: SQL | undefined
  groupBy?: SQL[]
  orderBy?: SQL[]
  limit?: number
  offset?: number
}

/**
 * What a store runs described reads and writes with (store-libsql: its connection's prepared synchronous statements;
 * store-postgres: postgres.js). The queries both stores run are written once over it (taskStore.ts, agentStore.ts,
 * userStore.ts of this package); what only one store does (group commit, transactions, advisory locks) stays in it.
 * @example const due = await x.rows({ from: 'tasks', where: eq(x.tables.tasks.status, 'paid'), limit: 10 })
 */
export type Executor = {
  /** How this store's dialect writes what the dialects write differently. */
  sql: SqlDialect
  /** This store's tables. */
  tables: Tables
  /** The whole rows `query` reads. */
  rows<Name extends TableName>(query: Query<Name>): Promise<RowOf<Name>[]>
  /** The `fields` of the rows `query` reads. */
  select<Selected extends Fields, Name extends TableName>(
    fields: Selected,
    query: Query<Name>,
  ): Promise<RowsOf<Selected>>
  /** How many rows `query` reads (its order and page left out). */
  count<Name extends TableName>(query: Pick<Query<Name>, 'from' | 'where'>): Promise<number>
  /** The first row of a whole statement, by its column names (a select of scalar subqueries, say). */
  first<Row extends Record<string, unknown>>(statement: SQL): Promise<Row | undefined>
  /** Sets `set` on the rows of `table` that `where` selects; answers those rows as they are after it. */
  update<Name extends TableName>(
    table: Name,
    set: SetOf<Name>,
    where: SQL | undefined,
  ): Promise<RowOf<Name>[]>
  /** Sets `set` on the rows of `table` that `where` selects; answers how many it changed. */
  change<Name extends TableName>(table: Name, set: SetOf<Name>, where: SQL | undefined): Promise<number>
}
