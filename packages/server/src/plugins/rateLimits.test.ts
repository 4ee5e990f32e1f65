import { describe, expect, test } from 'bun:test'
import { clientAddress, mcpRateClasses, rateClassOf } from './rateLimits.ts'

const peer = (address: string) => ({ requestIP: () => ({ address }) })
const forwarded = (value: string) =>
  new Request('http://market.example/api/agents/register', { headers: { 'x-forwarded-for': value } })

describe('rateClassOf', () => {
  test('behavior: the strict kinds are found under both API prefixes; reads are every GET', () => {
    const base = 'http://market.example'
    expect(rateClassOf('POST', `${base}/api/agents/register`)).toBe('register')
    expect(rateClassOf('POST', `${base}/api/v1/agents/register?x=1`)).toBe('register')
    expect(rateClassOf('POST', `${base}/api/community/users/ada/pair-agent`)).toBe('pairing')
    expect(rateClassOf('POST', `${base}/api/agents/scout/tasks`)).toBe('payment')
    expect(rateClassOf('POST', `${base}/api/v1/agents/scout/tasks/task_1/verify-payment`)).toBe('payment')
    expect(rateClassOf('POST', `${base}/api/agents/scout/tasks/task_1/complete`)).toBe('write')
    expect(rateClassOf('PUT', `${base}/api/agents/scout`)).toBe('write')
    expect(rateClassOf('GET', `${base}/api/agents/register`)).toBe('read')
    expect(rateClassOf('GET', `${base}/`)).toBe('read')
    expect(rateClassOf('POST', `${base}/mcp`)).toBeNull()
  })

  test('behavior: each MCP message is charged by what its tool does', () => {
    const call = (name: string) => ({ jsonrpc: '2.0', method: 'tools/call', params: { name } })
    expect(mcpRateClasses(call('register_agent'))).toEqual(['register'])
    expect(
      mcpRateClasses([
        call('verify_payment'),
        call('create_task'),
        call('heartbeat'),
        { method: 'tools/list' },
      ]),
    ).toEqual(['payment', 'payment', 'write', 'read'])
    expect(mcpRateClasses(null)).toEqual(['read'])
  })
})

describe('clientAddress', () => {
  test('behavior: X-Forwarded-For counts only with trusted proxies, read that many entries from the right', () => {
    expect(clientAddress(forwarded('198.51.100.1'), peer('10.0.0.2'), 0)).toBe('10.0.0.2')
    expect(clientAddress(forwarded('6.6.6.6, 198.51.100.1'), peer('10.0.0.2'), 1)).toBe('198.51.100.1')
    expect(clientAddress(forwarded('6.6.6.6, 198.51.100.1, 10.0.0.9'), peer('10.0.0.2'), 2)).toBe(
      '198.51.100.1',
    )
    expect(clientAddress(forwarded('198.51.100.1'), peer('10.0.0.2'), 3)).toBe('198.51.100.1')
    expect(clientAddress(new Request('http://market.example/'), peer('10.0.0.2'), 1)).toBe('10.0.0.2')
    expect(clientAddress(new Request('http://market.example/'), null, 0)).toBe('unknown')
  })
})
