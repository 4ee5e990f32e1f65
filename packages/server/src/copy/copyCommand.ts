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
  const source = await openTables(settings.databaseUrl, settings.databaseAuthToken)
  const target = await openTables(targetUrl).catch(async (error: unknown) => {
    await source.close()
    throw error
  })
  try {
    const report = await copyMarket(source, target)
    const from = printableDatabaseUrl(settings.databaseUrl)
    console.log(`agentmarket copy: ${from} -> ${printableDatabaseUrl(targetUrl)}`)
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
