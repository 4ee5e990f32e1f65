/** How long a condition may take before its test fails: generous, since the machine is shared (it is no measure). */
export const UNTIL_TIMEOUT_MS = 30_000

/**
 * Resolves once `done()` holds, checked again after each short sleep (`everyMs`); throws naming `what` when it still
 * does not hold after `timeoutMs`. A wait on a condition, never a measured time.
 * @example await until(() => received.length >= 2, 'both webhooks received')
 */
export async function until(
  done: () => boolean | Promise<boolean>,
  what: string,
  { timeoutMs = UNTIL_TIMEOUT_MS, everyMs = 5 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`until: ${what}, not within ${timeoutMs} ms`)
    await Bun.sleep(everyMs)
  }
}

/**
 * Runs `assertions` until they pass and returns their result; after `timeoutMs` throws their last error, so a read that
 * never converges fails with its own message. For reads through another process or node, which trail a write by a
 * moment that depends on the machine (a read cache, a change notice on its way).
 * @example await eventually(async () => expect((await read()).status).toBe(200))
 */
export async function eventually<T>(
  assertions: () => Promise<T> | T,
  { timeoutMs = UNTIL_TIMEOUT_MS, everyMs = 20 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    try {
      return await assertions()
    } catch (error) {
      if (performance.now() > deadline) throw error
      await Bun.sleep(everyMs)
    }
  }
}
