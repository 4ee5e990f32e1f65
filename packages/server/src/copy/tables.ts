import { describeTables, sqliteKit } from '@agentmarket/store-sql'
import { getTableName } from 'drizzle-orm'
import { getTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core'
import { isPostgresUrl } from '../database.ts'

/** `tables`, each after the tables its foreign keys name (so inserting in this order satisfies them). */
function inForeignKeyOrder(tables: SQLiteTable[]): SQLiteTable[] {
  const ordered: SQLiteTable[] = []
  const seen = new Set<SQLiteTable>()
  const visit = (table: SQLiteTable) => {
    if (seen.has(table)) return
    seen.add(table)
    for (const key of getTableConfig(table).foreignKeys) visit(key.reference().foreignTable)
    ordered.push(table)
  }
  for (const table of tables) visit(table)
  return ordered
}

/** The stores' tables as store-sql describes them once for both (SQLite's builders: the canonical columns). */
const DESCRIBED = inForeignKeyOrder(Object.values(describeTables(sqliteKit)) as SQLiteTable[])

/**
 * Every table of a market, in an order that satisfies their foreign keys: read from the stores' one description
 * (store-sql schema.ts), so a table added there is copied without a change here. Both stores keep the same columns
 * (PostgreSQL's events also hold `xid` and `position`).
 */
export const MARKET_TABLES: readonly string[] = DESCRIBED.map((table) => getTableName(table))

/**
 * Tables a store keeps besides the described ones, filled by its own triggers from them (libSQL: the full-text index
 * of agents and its shadow tables, and the change counter): the copy fills them by inserting the described rows.
 */
export const isDerivedTable = (name: string): boolean =>
  name === 'change_version' || name === 'agent_search' || name.startsWith('agent_search_')

/** A market table's SQL name. */
export type MarketTable = string

/** A column of a market table as the description gives it: its SQL name, and whether it holds a number or text. */
export type DescribedColumn = { name: string; number: boolean }

/** The described columns of each market table, in their order. */
export const DESCRIBED_COLUMNS: ReadonlyMap<MarketTable, DescribedColumn[]> = new Map(
  DESCRIBED.map((table) => [
    getTableName(table),
    getTableConfig(table).columns.map((column) => ({
      name: column.name,
      number: column.dataType === 'number',
    })),
  ]),
)

/** A row as the database gives it: column name to value. */
export type TableRow = Record<string, unknown>

/** One side of a copy: a migrated database read or written a table at a time, by raw rows. */
export type TableStore = {
  /** The names of `table`'s columns. */
  columns(table: MarketTable): Promise<string[]>
  /** How many rows `table` holds. */
  count(table: MarketTable): Promise<number>
  /** `table`'s rows in pages of `size`, in storage order. */
  pages(table: MarketTable, size: number): AsyncGenerator<TableRow[]>
  /** Inserts rows (only the named columns) into `table`. */
  insert(table: MarketTable, rows: TableRow[]): Promise<void>
  /** After every table is copied: sequences and feed positions continue after the copied rows. */
  finish(): Promise<void>
  close(): Promise<void>
}

/** A libSQL database (a file, :memory: or libsql://), migrated on opening. */
async function libsqlTables(url: string, authToken: string | undefined): Promise<TableStore> {
  const { openDatabase } = await import('@agentmarket/store-libsql')
  const { connection, close } = await openDatabase(url, authToken)
  return {
    async columns(table) {
      return connection.all(`pragma table_info(${table})`).map((column) => String(column.name))
    },
    async count(table) {
      return Number(connection.values(`select count(*) from ${table}`)[0]?.[0] ?? 0)
    },
    async *pages(table, size) {
      // Every market table is a rowid table: pages by rowid, each one indexed seek.
      let after = -1
      for (;;) {
        const rows = connection.all(
          `select rowid as "__rowid", * from ${table} where rowid > ? order by rowid limit ?`,
          [after, size],
        )
        if (rows.length === 0) return
        after = Number(rows.at(-1)?.__rowid)
        yield rows.map(({ __rowid: _, ...row }) => row)
      }
    },
    async insert(table, rows) {
      const [first] = rows
      if (!first) return
      const names = Object.keys(first)
      const statement = `insert into ${table} (${names.map((name) => `"${name}"`).join(', ')})
        values (${names.map(() => '?').join(', ')})`
      await connection.writeTransaction(() => {
        for (const row of rows)
          connection.run(
            statement,
            names.map((name) => row[name] ?? null),
          )
      })
    },
    async finish() {},
    async close() {
      close()
    },
  }
}

/** How long a copy waits for PostgreSQL: connecting, each statement, each migration statement (milliseconds). */
export type CopyTimeouts = { connectMs: number; statementMs: number; migrationMs: number }

/** A PostgreSQL database, migrated on opening; PostgreSQL ends a statement of the copy past `timeouts.statementMs`. */
async function postgresTables(url: string, timeouts?: CopyTimeouts): Promise<TableStore> {
  const { feedSequencer, openPostgres } = await import('@agentmarket/store-postgres')
  const database = await openPostgres(url, { max: 2, ...(timeouts ? { timeouts } : {}) })
  const { sql, close } = database
  // Feed events' public ids are their positions: every finished write's events get theirs before the copy reads them.
  const sequencer = feedSequencer(database)
  await sequencer.run()
  sequencer.stop()
  return {
    async columns(table) {
      const rows = await sql<{ name: string }[]>`select column_name as name from information_schema.columns
        where table_schema = current_schema() and table_name = ${table} order by ordinal_position`
      return rows.map((row) => row.name)
    },
    async count(table) {
      return Number((await sql.unsafe(`select count(*) as n from ${table}`))[0]?.n ?? 0)
    },
    async *pages(table, size) {
      // Pages by physical row id (ctid), each a TID range scan: no sort, no OFFSET.
      let after = '(0,0)'
      for (;;) {
        const rows = await sql.unsafe(
          `select ctid::text as "__ctid", * from ${table} where ctid > $1::tid order by ctid limit $2`,
          [after, size],
        )
        if (rows.length === 0) return
        after = String(rows.at(-1)?.__ctid)
        const plain = rows.map(({ __ctid: _, ...row }) => row)
        // An event goes out under its public id (its position), which a store without positions keeps as its seq.
        yield table === 'events' ? plain.map((row) => ({ ...row, seq: row.position ?? row.seq })) : plain
      }
    },
    async insert(table, rows) {
      if (rows.length === 0) return
      // A libSQL market's events get their public ids as positions: a feed client's Last-Event-ID stays valid.
      const shaped =
        table === 'events' ? rows.map((row) => ({ ...row, position: row.position ?? row.seq })) : rows
      await sql`insert into ${sql(table)} ${sql(shaped as Record<string, unknown>[])}`
    },
    async finish() {
      for (const table of ['milestones', 'events'])
        await sql.unsafe(
          `select setval(pg_get_serial_sequence('${table}', 'seq'), coalesce((select max(seq) from ${table}), 0) + 1, false)`,
        )
    },
    close,
  }
}

/**
 * Opens the database `url` names for copying (PostgreSQL for postgres://, else libSQL), migrated.
 * @example const source = await openTables('file:./data/market.db')
 */
export function openTables(url: string, authToken?: string, timeouts?: CopyTimeouts): Promise<TableStore> {
  return isPostgresUrl(url) ? postgresTables(url, timeouts) : libsqlTables(url, authToken)
}
