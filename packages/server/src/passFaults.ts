import { MarketError } from '@agentmarket/core'
import type { Logger } from './log.ts'

/**
 * True for a fault of a dependency the API answers with a 503 or 507 (the database unavailable or full, the chain
 * unavailable), as opposed to a bug.
 */
export const isDependencyFault = (error: unknown): error is MarketError =>
  error instanceof MarketError && (error.status === 503 || error.status === 507)

/**
 * How a background pass (re-checks, expiry, webhook and mail delivery) reports its failures: a dependency fault as
 * one warning when the pass first meets it and one line when the pass works again, not an error line per pass (an
 * outage of the database made about 8 a second), and anything else as an error each time.
 * @example const faults = passFaults(logger, 'task expiry'); try { await run(); faults.succeeded() } catch (error) { faults.failed(error) }
 */
export function passFaults(logger: Logger, what: string) {
  let waiting = false
  return {
    /** Reports `error`, the failure of one pass. */
    failed(error: unknown) {
      if (!isDependencyFault(error)) return logger.error(`${what} failed`, {}, error)
      if (!waiting) logger.warn(`${what} waits for a dependency`, { code: error.code })
      waiting = true
    },
    /** Notes a pass that worked: the next dependency fault is told again. */
    succeeded() {
      if (waiting) logger.info(`${what} works again`)
      waiting = false
    },
  }
}
