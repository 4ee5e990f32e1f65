import { describe, expect, test } from 'bun:test'
import { summarize } from './audit.ts'

describe('scripts/audit.ts', () => {
  test('behavior: advisories are counted by severity, and only a critical one fails CI', () => {
    const report = {
      'some-lib': [
        { title: 'Prototype pollution', severity: 'high', url: 'https://x/1', vulnerable_versions: '<2.0.0' },
      ],
      other: [{ title: 'ReDoS', severity: 'moderate', url: 'https://x/2', vulnerable_versions: '<1.1.0' }],
    }
    const high = summarize(1, JSON.stringify(report), '')
    expect(high.code).toBe(0)
    expect(high.lines[0]).toBe(
      'dependency audit (production dependencies): 2 advisories (0 critical, 1 high, 1 moderate, 0 low)',
    )
    expect(high.lines[1]).toContain('some-lib <2.0.0 Prototype pollution')
    const critical = summarize(1, JSON.stringify({ bad: [{ severity: 'critical', title: 'RCE' }] }), '')
    expect(critical.code).toBe(1)
    expect(summarize(0, '{}', '').lines[0]).toContain(': 0 advisories')
  })

  test('behavior: an unreachable advisory database is reported as not checked, without failing', () => {
    const refused = summarize(
      0,
      '',
      'error: POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk - 405',
    )
    expect(refused).toEqual({
      lines: [expect.stringContaining('NOT CHECKED')],
      code: 0,
    })
    expect(summarize(null, '', '').lines[0]).toContain('no answer within 60 s')
  })
})
