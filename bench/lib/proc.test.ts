import { expect, test } from 'bun:test'
import { readUntil } from '../../tests/support/process.ts'
import { clockTicks, cpuMs, residentMiB } from './proc.ts'

/** A child that spins until its own `process.cpuUsage()` shows 300 ms, fills a 64 MiB buffer, prints both, then waits. */
const CHILD = `let x = 0
const start = process.cpuUsage()
for (;;) {
  for (let i = 0; i < 1e6; i++) x += i
  const spent = process.cpuUsage(start)
  if (spent.user + spent.system >= 300_000) break
}
const buffer = Buffer.alloc(64 * 2 ** 20, 1)
const used = process.cpuUsage()
console.log(JSON.stringify({ cpuMs: (used.user + used.system) / 1000, filled: buffer[2 ** 20] + (x > 0 ? 0 : 1) }))
setInterval(() => buffer.length, 1000)`

test("behavior: a child's CPU and resident memory, as /proc tells them, match what the child counts itself", async () => {
  const child = Bun.spawn(['bun', '-e', CHILD], { stdout: 'pipe', stderr: 'inherit' })
  try {
    const line = await readUntil(child.stdout, (text) => text.includes('\n'), 120_000)
    const own = JSON.parse(line) as { cpuMs: number; filled: number }
    expect(own.filled).toBe(1)
    const seen = cpuMs(child.pid)
    // The child printed after its own count; it waits on a timer since (a tick or two of CPU at most).
    expect(seen).toBeGreaterThanOrEqual(own.cpuMs - 2 * (1000 / clockTicks))
    expect(seen).toBeLessThan(own.cpuMs + 200)
    const memory = residentMiB(child.pid)
    // The peak, not the resident size now: a loaded machine may have reclaimed pages of the filled buffer since.
    expect(memory.peak).toBeGreaterThanOrEqual(64)
    expect(memory.peak).toBeGreaterThanOrEqual(memory.now)
  } finally {
    child.kill()
    await child.exited
  }
})

test('behavior: a process that is gone is an error, not a zero', () => {
  expect(() => cpuMs(2 ** 22 + 1)).toThrow()
  expect(() => residentMiB(2 ** 22 + 1)).toThrow()
})
