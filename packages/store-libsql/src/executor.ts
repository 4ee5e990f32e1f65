import { type Executor, type Query, sqliteSql, type TableName } from '@agentmarket/store-sql'
import type { SQL } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import { toStatement } from './connection.ts'
import type { Database } from './open.ts'
import { tables } from './schema.ts'

/** A described query's parts after FROM, on a drizzle select builder of either shape. */
type Builder = {
  innerJoin(table: SQLiteTable, on: SQL): Builder
  where(where: SQL | undefined): Builder
  groupBy(...groups: SQL[]): Builder
  orderBy(...order: SQL[]): Builder
  limit(limit: number): Builder
  offset(offset: number): Builder
}

/** `builder` with the parts `query` gives, in SQL's order; parts it leaves out are not written. */
function described(builder: Builder, query: Query<TableName>) {
  let built = builder
  if (query.join) built = built.innerJoin(tables[query.join.table] as SQLiteTable, query.join.on)
  if (query.where) built = built.where(query.where)
  if (query.groupBy) built = built.groupBy(...query.groupBy)
  if (query.orderBy) built = built.orderBy(...query.orderBy)
  if (query.limit !== undefined) built = built.limit(query.limit)
  if (query.offset !== undefined) built = built.offset(query.offset)
  return built as unknown as { all(): unknown[] }
}

/**
 * The libSQL store's executor: each described query built by drizzle and run at once, synchronously, on the
 * connection's cached prepared statements (decision 0006). Writes outside a batch commit on their own; batched and
 * grouped writes stay in the store (writes.ts).
 */
export function sqliteExecutor({ db, connection }: Database): Executor {
  const table = (name: TableName) => tables[name] as SQLiteTable
  return {
    sql: sqliteSql,
    tables,
    async rows(query) {
      return described(db.select().from(table(query.from)) as never, query).all() as never
    },
    async select(fields, query) {
      return described(db.select(fields as never).from(table(query.from)) as never, query).all() as never
    },
    async count({ from, where }) {
      const [counted] = await db.select({ total: sqliteSql.count }).from(table(from)).where(where)
      return Number(counted?.total ?? 0)
    },
    async first(statement) {
      const { sql, args } = toStatement(statement)
      return connection.get(sql, args) as never
    },
    async update(name, set, where) {
      return connection.unlocked(
        () =>
          db
            .update(table(name))
            .set(set as never)
            .where(where)
            .returning()
            .all() as never,
      )
    },
    async change(name, set, where) {
      return connection.unlocked(
        () =>
          db
            .update(table(name))
            .set(set as never)
            .where(where)
            .run().changes,
      )
    },
  }
}
