import { describe, expect, test } from 'bun:test'
import { ChainUnavailableError, StorageFullError, StoreUnavailableError } from '@agentmarket/core'
import { jsonLogger } from './log.ts'
import { passFaults } from './passFaults.ts'

/** A logger at `info` whose lines are kept, parsed, in order. */
function recordedLogger() {
  const lines: { level: string; msg: string; code?: string }[] = []
  const logger = jsonLogger('info', (text) => {
    for (const line of text.split('\n').filter(Boolean)) lines.push(JSON.parse(line))
  })
  return { logger, lines }
}

describe('background pass faults', () => {
  test('attack: a database outage under a pass every tick is one warning and one line when it works again, not an error per pass', () => {
    const { logger, lines } = recordedLogger()
    const faults = passFaults(logger, 'task expiry')
    for (let pass = 0; pass < 50; pass++) faults.failed(new StoreUnavailableError('unchanged'))
    faults.failed(new StorageFullError())
    faults.failed(new ChainUnavailableError('the RPC is down'))
    faults.succeeded()
    faults.succeeded()
    faults.failed(new StoreUnavailableError('unknown'))
    logger.flush(true)
    expect(lines.map(({ level, msg }) => `${level} ${msg}`)).toEqual([
      'warn task expiry waits for a dependency',
      'info task expiry works again',
      'warn task expiry waits for a dependency',
    ])
    expect(lines[0]?.code).toBe('database_unavailable')
  })

  test('error: anything else (a bug) is an error line each time', () => {
    const { logger, lines } = recordedLogger()
    const faults = passFaults(logger, 'webhook fan-out')
    faults.failed(new TypeError('x is undefined'))
    faults.failed(new TypeError('x is undefined'))
    logger.flush(true)
    expect(lines.map(({ level, msg }) => `${level} ${msg}`)).toEqual([
      'error webhook fan-out failed',
      'error webhook fan-out failed',
    ])
  })
})
