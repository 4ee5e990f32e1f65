// What a test helper starts that would outlive its test (a PostgreSQL server, its folder) is ended when the process
// ends, whichever way: a test that failed before its stop(), a describe whose afterAll never ran because `bun test -t`
// filtered out its tests. A plain process ends it on 'exit'; bun test emits no 'exit' to listeners, so its preload
// (tests/support/testEnd.ts, in bunfig.toml) runs the same endings after the last test file.

const endings = new Set<() => void>()

/** Runs every ending registered and not yet released, each once; one that fails does not stop the others. */
export function endLeftovers() {
  for (const end of [...endings]) {
    endings.delete(end)
    try {
      end()
    } catch {
      // Ended already, or nothing left to end.
    }
  }
}

/**
 * Registers `end` (synchronous: a process about to exit cannot wait) to run when the process ends; the function
 * returned releases it, once the helper ended what it started itself.
 * @example const release = atProcessEnd(() => rmSync(folder, { recursive: true, force: true }))
 */
export function atProcessEnd(end: () => void): () => void {
  endings.add(end)
  return () => {
    endings.delete(end)
  }
}

process.on('exit', endLeftovers)
