/** Requests in flight at once, as wrk's 32 connections. */
export const CONCURRENCY = 32

/**
 * CPU µs per request of `count` requests by `process.cpuUsage()`, sent in groups of `CONCURRENCY` (`group` sends one
 * and awaits its answers): user and system CPU, or user CPU alone with `userOnly` (a write's system CPU is mostly its
 * sync).
 */
export async function cpuMicrosPer(
  count: number,
  group: () => Promise<unknown>,
  userOnly = false,
): Promise<number> {
  const cpu = process.cpuUsage()
  for (let sent = 0; sent < count; sent += CONCURRENCY) await group()
  const used = process.cpuUsage(cpu)
  return (used.user + (userOnly ? 0 : used.system)) / count
}

/** `batches` figures of `batch` after one more to warm up (statements prepared, code compiled, pages cached). */
export async function warmedBatches(batch: () => Promise<number>, batches = 5): Promise<number[]> {
  await batch()
  const figures: number[] = []
  for (let index = 0; index < batches; index++) figures.push(await batch())
  return figures
}
