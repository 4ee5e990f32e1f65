import { describe, expect, test } from 'bun:test'
import { DEFAULT_RATE_POLICIES } from '@agentmarket/core/routes'
import { readSettings } from './env.ts'

describe('readSettings', () => {
  test('behavior: RATE_LIMIT_POLICIES sets any kind the core limits, register_attempt included', () => {
    const kinds = Object.keys(DEFAULT_RATE_POLICIES)
    const settings = readSettings({
      RATE_LIMIT_POLICIES: kinds.map((kind, index) => `${kind}=${100_000_000 + index}/60`).join(','),
    })
    for (const [index, kind] of kinds.entries())
      expect(settings.ratePolicies[kind as keyof typeof DEFAULT_RATE_POLICIES]).toEqual({
        name: kind,
        limit: 100_000_000 + index,
        windowSeconds: 60,
      })
  })

  test('error: an unknown kind or a limit of ten digits stops start-up', () => {
    for (const value of ['everything=1/60', 'read=1000000000/60', 'register_attempts=1/60'])
      expect(() => readSettings({ RATE_LIMIT_POLICIES: value })).toThrow(/RATE_LIMIT_POLICIES/)
  })

  test('behavior: SMTP connection limits default to 10 per address, 100 in all, 300 s a session; each can be set', () => {
    expect(readSettings({}).smtpConnections).toEqual({ perClient: 10, total: 100, sessionSeconds: 300 })
    const settings = readSettings({
      SMTP_CLIENT_CONNECTIONS: '3',
      SMTP_CONNECTIONS_MAX: '40',
      SMTP_SESSION_SECONDS: '120',
    })
    expect(settings.smtpConnections).toEqual({ perClient: 3, total: 40, sessionSeconds: 120 })
    expect(() => readSettings({ SMTP_SESSION_SECONDS: '0' })).toThrow(/SMTP_SESSION_SECONDS/)
  })
})
