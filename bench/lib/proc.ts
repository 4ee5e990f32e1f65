/**
 * What Linux's /proc says about another process: the CPU it has used (user + system, all threads) and its resident
 * memory, now and at its peak. A bench reads its children here, where their own `process.cpuUsage()` is out of reach.
 */
import { readFileSync } from 'node:fs'
import { runToEnd } from '../../tests/support/process.ts'

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux): a CPU reading is good to 1000 / this ms. */
export const clockTicks = Number((await runToEnd(['getconf', 'CLK_TCK'])).stdout.trim()) || 100

/** CPU milliseconds (user + system, all threads) process `pid` has used so far. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // After "pid (comm) " (comm may hold spaces and parentheses), utime and stime (fields 14 and 15) are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
}

/** Resident memory of process `pid` in MiB: now (VmRSS) and the most it has held since it started (VmHWM). */
export function residentMiB(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 }
}
