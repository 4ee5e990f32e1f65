// Reads through another process or node trail a write by a moment that depends on the machine (a read cache, a change
// notice on its way): a test waits for its assertions to hold, not for a fixed time, so its verdict never depends on
// the machine's speed. A read that never converges still fails, with the last assertion's own message.

/** How long assertions may take to hold before the test fails: far beyond any honest delay on a loaded machine. */
const CONVERGE_MS = 30_000
/** The pause between two tries: short, so a fast machine does not wait. */
const RETRY_MS = 20

/**
 * Runs `assertions` until they pass, then returns their result; after `timeoutMs` throws their last error.
 * @example await eventually(async () => expect((await read()).status).toBe(200))
 */
export async function eventually<T>(assertions: () => Promise<T> | T, timeoutMs = CONVERGE_MS): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    try {
      return await assertions()
    } catch (error) {
      if (performance.now() > deadline) throw error
      await Bun.sleep(RETRY_MS)
    }
  }
}
