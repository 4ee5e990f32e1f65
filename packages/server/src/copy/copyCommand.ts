import { createHash } from 'node:crypto'
import { printableDatabaseUrl } from '../database.ts'
import type { Settings } from '../env.ts'
import {
  DESCRIBED_COLUMNS,
  type DescribedColumn,
  MARKET_TABLES,
  type MarketTable,
  openTables,
  type TableRow,
  type TableStore,
} from './tables.ts'

/** Rows read and written at a time. */
const PAGE = 1_000

/** A step of a copy that one database did not finish within DATABASE_COPY_TIMEOUT_MS. */
export class CopyTimeoutError extends Error {
  override readonly name = 'CopyTimeoutError'
}

/** True for PostgreSQL's 57014 query_canceled: the copy's own statement_timeout ended a statement. */
const isStatementTimeout = (error: unknown) => (error as { code?: unknown }).code === '57014'

/**
 * `store` with every step bounded by `ms`: a step past it (a database that stopped answering, where no statement
 * timeout can fire, or one PostgreSQL ended by the same bound) fails with a CopyTimeoutError naming the database and
 * the step, so the copy ends instead of hanging.
 */
export function boundedTables(store: TableStore, ms: number, database: string): TableStore {
  const bounded = <T>(step: string, work: () => Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = () =>
      new CopyTimeoutError(
        `${database} did not finish ${step} within ${ms} ms (DATABASE_COPY_TIMEOUT_MS): the copy stopped there; copy again into a new, empty database once it answers`,
      )
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeout()), ms)
    })
    const done = work().catch((error: unknown) => {
      throw isStatementTimeout(error) ? timeout() : error
    })
    return Promise.race([done, expired]).finally(() => clearTimeout(timer))
  }
  return {
    columns: (table) => bounded(`reading the columns of ${table}`, () => store.columns(table)),
    count: (table) => bounded(`counting the rows of ${table}`, () => store.count(table)),
    async *pages(table, size) {
      const pages = store.pages(table, size)
      for (;;) {
        const page = await bounded(`reading a page of ${table}`, () => pages.next())
        if (page.done) return
        yield page.value
      }
    },
    insert: (table, rows) => bounded(`writing a page of ${table}`, () => store.insert(table, rows)),
    finish: () => bounded('setting the sequences after the copy', () => store.finish()),
    close: () => store.close(),
  }
}

/** One table after a copy: its rows and its content digest on each side. */
export type CopiedTable = {
  table: MarketTable
  from: number
  to: number
  fromDigest: string
  toDigest: string
}

/** What a copy moved: every market table, on each side. */
export type CopyReport = CopiedTable[]

/** Keeps only the columns the target table has. */
const fitTo = (columns: Set<string>) => (row: TableRow) =>
  Object.fromEntries(Object.entries(row).filter(([name]) => columns.has(name)))

/**
 * A row's described columns as both stores give them the same: numbers as numbers (PostgreSQL's bigint arrives as
 * text), text as text, absent as null.
 */
function canonicalRow(row: TableRow, columns: DescribedColumn[]): string {
  const value = (column: DescribedColumn) => {
    const raw = row[column.name]
    if (raw === null || raw === undefined) return null
    return column.number ? Number(raw) : String(raw)
  }
  return JSON.stringify(columns.map(value))
}

/**
 * SHA-256 of a table's content, whatever order its store keeps the rows in: the sorted hashes of its rows' described
 * columns, hashed together (16 hex digits shown).
 */
export async function tableDigest(store: TableStore, table: MarketTable): Promise<string> {
  const columns = DESCRIBED_COLUMNS.get(table) ?? []
  const rows: string[] = []
  for await (const page of store.pages(table, PAGE))
    for (const row of page) rows.push(createHash('sha256').update(canonicalRow(row, columns)).digest('hex'))
  const whole = createHash('sha256')
  for (const row of rows.sort()) whole.update(row)
  return whole.digest('hex').slice(0, 16)
}

/** Copies every market table from `source` to `target`, a page at a time; rows and digest per table on both sides. */
export async function copyMarket(source: TableStore, target: TableStore): Promise<CopyReport> {
  for (const table of MARKET_TABLES)
    if ((await target.count(table)) > 0)
      throw new Error(`the target already holds ${table}: copy into a new, empty database`)
  for (const table of MARKET_TABLES) {
    const fit = fitTo(new Set(await target.columns(table)))
    for await (const rows of source.pages(table, PAGE)) await target.insert(table, rows.map(fit))
  }
  await target.finish()
  const report: CopyReport = []
  for (const table of MARKET_TABLES)
    report.push({
      table,
      from: await source.count(table),
      to: await target.count(table),
      fromDigest: await tableDigest(source, table),
      toDigest: await tableDigest(target, table),
    })
  return report
}

/** A table's line of the report: its name, rows on each side, its digest, and whether both sides match. */
function reportLine({ table, from, to, fromDigest, toDigest }: CopiedTable): string {
  const same = from === to && fromDigest === toDigest
  const digest = fromDigest === toDigest ? fromDigest : `${fromDigest}/${toDigest}`
  return `  ${table.padEnd(18)} ${String(from).padStart(9)} ${String(to).padStart(9)}  ${digest}  ${same ? 'same' : 'DIFFERS'}`
}

/**
 * `agentmarket copy TARGET_URL`: copies the market of DATABASE_URL into the new, empty database TARGET_URL (libSQL or
 * PostgreSQL, migrated first), every table of the stores' schema, then prints each table's rows on both sides and
 * the digest of its content (SHA-256 of its rows). Exit 0 when every count and digest matches.
 * Stop the servers on DATABASE_URL first: writes made during the copy may be missed.
 * @example process.exitCode = await runCopy(readSettings(process.env), 'postgres://market@db/market')
 */
export async function runCopy(settings: Settings, targetUrl: string): Promise<number> {
  const { connectMs, migrationMs, copyMs } = settings.databaseTimeouts
  // The copy's own deadline, never a request's: a healthy large copy takes as many steps as it needs.
  const timeouts = { connectMs, statementMs: copyMs, migrationMs }
  const from = printableDatabaseUrl(settings.databaseUrl)
  const to = printableDatabaseUrl(targetUrl)
  const source = await openTables(settings.databaseUrl, settings.databaseAuthToken, timeouts)
  const target = await openTables(targetUrl, undefined, timeouts).catch(async (error: unknown) => {
    await source.close()
    throw error
  })
  try {
    const report = await copyMarket(
      boundedTables(source, copyMs, `the source database ${from}`),
      boundedTables(target, copyMs, `the target database ${to}`),
    )
    console.log(`agentmarket copy: ${from} -> ${to}`)
    for (const row of report) console.log(reportLine(row))
    const differing = report.filter((row) => row.from !== row.to || row.fromDigest !== row.toDigest)
    if (differing.length > 0) {
      console.error(
        `agentmarket copy: rows or content differ in ${differing.map((row) => row.table).join(', ')}`,
      )
      return 1
    }
    console.log(
      `agentmarket copy: all ${report.length} tables copied; rows and content digests (SHA-256 of each table's rows) match`,
    )
    return 0
  } finally {
    await Promise.all([source.close(), target.close()])
  }
}
