/** How much the server logs: `info` a line per request, `warn` only failures, `off` nothing. */
export type LogLevel = 'info' | 'warn' | 'off'

/** Fields of one log line; never a key, pairing code, signature, e-mail or task params (SECURITY.md). */
export type LogFields = Record<string, string | number | boolean | null | undefined>

/** A JSON-lines logger: one object per line on standard output, `time`, `level` and `msg` first. */
export type Logger = {
  level: LogLevel
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields, error?: unknown): void
  /** Writes the lines still waiting for the end of this turn of the event loop. */
  flush(): void
}

/** What may be logged of a thrown value: its kind, message and stack, never the object itself. */
function describeError(error: unknown): LogFields {
  if (!(error instanceof Error)) return { error: String(error) }
  return { error: `${error.name}: ${error.message}`, stack: error.stack?.split('\n').slice(1, 6).join('\n') }
}

/**
 * A logger writing JSON lines. Lines of one turn of the event loop go out in one write, so a busy server does not
 * pay a system call per request.
 * @example const log = jsonLogger('info'); log.info('listening', { port: 3000 })
 */
export function jsonLogger(
  level: LogLevel,
  write: (text: string) => void = (text) => process.stdout.write(text),
) {
  let pending: string[] = []
  const flush = () => {
    if (pending.length === 0) return
    const text = pending.join('')
    pending = []
    write(text)
  }
  const line = (severity: string, msg: string, fields: LogFields = {}) => {
    if (pending.length === 0) setImmediate(flush)
    pending.push(`${JSON.stringify({ time: new Date().toISOString(), level: severity, msg, ...fields })}\n`)
  }
  const logger: Logger = {
    level,
    info: (msg, fields) => level === 'info' && line('info', msg, fields),
    warn: (msg, fields) => level !== 'off' && line('warn', msg, fields),
    error: (msg, { error, ...fields } = {}) =>
      level !== 'off' &&
      line('error', msg, { ...fields, ...(error === undefined ? {} : describeError(error)) }),
    flush,
  }
  return logger
}

/** Failures of code started without a logger of its own (tests, embedding) go here. */
export const fallbackLogger: Logger = jsonLogger('warn')
