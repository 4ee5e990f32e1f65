import { describe, expect, test } from 'bun:test'
import { jsonLogger } from './log.ts'
import { loggedPath } from './requestPath.ts'

describe('jsonLogger', () => {
  test('behavior: an error is logged without the values its message quotes, and cut short', () => {
    const lines: string[] = []
    const logger = jsonLogger('warn', (text) => lines.push(text))
    const failure = new Error(
      `fts5: syntax error near "search-secret-word" in 'params-secret' ${'x'.repeat(500)}`,
    )
    logger.error('unhandled error', { method: 'GET' }, failure)
    logger.flush(true)
    const line = JSON.parse(lines.join('').trim()) as { error: string; stack: string }
    expect(line.error).toStartWith('Error: fts5: syntax error near "…" in "…"')
    expect(line.error.length).toBeLessThan(320)
    expect(lines.join('')).not.toContain('secret')
    expect(line.stack).toContain('at ')
  })
})

describe('loggedPath', () => {
  test('behavior: the query is dropped and whatever follows /tasks/ is redacted, in any case', () => {
    const id = `task_${'ab'.repeat(16)}`
    expect(loggedPath(`http://h/api/agents/scout/tasks/${id}?x=1`)).toBe('/api/agents/scout/tasks/{id}')
    expect(loggedPath(`http://h/api/v1/agents/scout/TASKS/${id}/complete`)).toBe(
      '/api/v1/agents/scout/TASKS/{id}/complete',
    )
    expect(loggedPath('http://h/api/agents/scout/tasks')).toBe('/api/agents/scout/tasks')
  })
})
