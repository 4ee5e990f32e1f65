import { printableDatabaseUrl } from '../database.ts'
import type { Settings } from '../env.ts'
import { MARKET_TABLES, type MarketTable, openTables, type TableRow, type TableStore } from './tables.ts'

/** Rows read and written at a time. */
const PAGE = 1_000

/** What a copy moved: rows per table, on each side. */
export type CopyReport = { table: MarketTable; from: number; to: number }[]

/** Keeps only the columns the target table has. */
const fitTo = (columns: Set<string>) => (row: TableRow) =>
  Object.fromEntries(Object.entries(row).filter(([name]) => columns.has(name)))

/** Copies every market table from `source` to `target`, a page at a time; rows per table on both sides. */
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
    report.push({ table, from: await source.count(table), to: await target.count(table) })
  return report
}

/**
 * `agentmarket copy TARGET_URL`: copies the market of DATABASE_URL into the new, empty database TARGET_URL (libSQL or
 * PostgreSQL, migrated first), then prints the rows of each table on both sides. Exit 0 when every count matches.
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
    for (const { table, from: read, to: written } of report)
      console.log(`  ${table.padEnd(14)} ${String(read).padStart(9)} ${String(written).padStart(9)}`)
    const differing = report.filter((row) => row.from !== row.to)
    if (differing.length > 0) {
      console.error(`agentmarket copy: counts differ in ${differing.map((row) => row.table).join(', ')}`)
      return 1
    }
    return 0
  } finally {
    await Promise.all([source.close(), target.close()])
  }
}
