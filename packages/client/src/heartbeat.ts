import { sleep } from './fetching.ts'
import type { Heartbeat } from './types.ts'

/** Runs `beat` now and every `intervalMs` until the returned function is called (which also aborts a beat). */
export function startHeartbeat(
  beat: (signal: AbortSignal) => Promise<Heartbeat>,
  options: { intervalMs?: number; onBeat?: (beat: Heartbeat) => void; onError?: (error: unknown) => void },
): () => void {
  const stopped = new AbortController()
  const intervalMs = options.intervalMs ?? 60_000
  const loop = async () => {
    while (!stopped.signal.aborted) {
      try {
        const answer = await beat(stopped.signal)
        options.onBeat?.(answer)
      } catch (error) {
        if (!stopped.signal.aborted) options.onError?.(error)
      }
      await sleep(intervalMs, stopped.signal).catch(() => undefined)
    }
  }
  // After the caller holds the stop function: an onError of the first beat may call it.
  queueMicrotask(() => void loop())
  return () => stopped.abort()
}
