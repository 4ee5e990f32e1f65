import type { JobCounts } from '@agentmarket/core/rows'
import { sqliteSql, trustChangeStatements, trustSql } from '@agentmarket/store-sql'
import { inArray, type SQL } from 'drizzle-orm'
import { tables, tasks } from './schema.ts'

const trust = trustSql(sqliteSql)

/** The SET list that sums an agent's trust counters again from its rows (store-sql trust.ts), in an UPDATE of agents. */
export const trustTotalsSet = (): SQL => trust.totalsSet

/** The agent's paid points from its credit counters (store-sql trust.ts), for `agents.paid_points`. */
export const PAID_POINTS: SQL = trust.paidPoints

/**
 * The statements that move a seller's trust rows for a job change (store-sql trustChange.ts). They run in the
 * change's batch before its compare-and-set and act only while the task is still in one of `from`, that is exactly
 * when that compare-and-set changes it.
 */
export function trustStatements(
  taskId: string,
  from: readonly string[],
  at: number,
  counts: JobCounts,
): SQL[] {
  return trustChangeStatements(sqliteSql, tables, {
    taskId,
    at,
    counts,
    gate: inArray(tasks.status, [...from]),
  })
}
