import { type Executor, postgresSql, type Query, type TableName } from '@agentmarket/store-sql'
import type { SQL } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'
import type { PostgresDatabase } from './open.ts'
import { tables } from './schema.ts'

/** A described query's parts after FROM, on a drizzle select builder. */
type Builder = {
  innerJoin(table: PgTable, on: SQL): Builder
  where(where: SQL | undefined): Builder
  groupBy(...groups: SQL[]): Builder
  orderBy(...order: SQL[]): Builder
  limit(limit: number): Builder
  offset(offset: number): Builder
}

/** `builder` with the parts `query` gives, in SQL's order; parts it leaves out are not written. */
function described(builder: Builder, query: Query<TableName>): Promise<never> {
  let built = builder
  if (query.join) built = built.innerJoin(tables[query.join.table] as PgTable, query.join.on)
  if (query.where) built = built.where(query.where)
  if (query.groupBy) built = built.groupBy(...query.groupBy)
  if (query.orderBy) built = built.orderBy(...query.orderBy)
  if (query.limit !== undefined) built = built.limit(query.limit)
  if (query.offset !== undefined) built = built.offset(query.offset)
  return built as unknown as Promise<never>
}

/**
 * The PostgreSQL store's executor: each described query built by drizzle and sent through postgres.js as a named
 * prepared statement (open.ts). Transactions, advisory locks and row locks stay in the store's own methods.
 */
export function postgresExecutor({ db }: PostgresDatabase): Executor {
  const table = (name: TableName) => tables[name] as PgTable
  return {
    sql: postgresSql,
    tables,
    rows: (query) => described(db.select().from(table(query.from)) as never, query),
    select: (fields, query) => described(db.select(fields as never).from(table(query.from)) as never, query),
    async count({ from, where }) {
      const [counted] = await db.select({ total: postgresSql.count }).from(table(from)).where(where)
      return Number(counted?.total ?? 0)
    },
    async first(statement) {
      const [row] = await db.execute(statement)
      return row as never
    },
    async update(name, set, where) {
      return db
        .update(table(name))
        .set(set as never)
        .where(where)
        .returning() as never
    },
    async change(name, set, where) {
      const changed = await db
        .update(table(name))
        .set(set as never)
        .where(where)
      return changed.count
    },
  }
}
