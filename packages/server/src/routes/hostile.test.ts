import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp } from '../testing/http.ts'

type Case = { label: string; body?: unknown; headers?: Record<string, string> }

const big = 'x'.repeat(100 * 1024)
const justUnderLimit = 'y'.repeat(60 * 1024)
const hostileBodies: Case[] = [
  { label: 'invalid JSON', body: '{"name": "x",' },
  { label: 'truncated JSON', body: '{' },
  { label: 'JSON array', body: '[{"name":"x"}]' },
  { label: 'JSON string', body: '"x"' },
  { label: 'JSON null', body: 'null' },
  { label: 'JSON number', body: '42' },
  { label: 'invalid UTF-8', body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
  { label: 'form body', body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
  {
    label: 'wrong types',
    body: { name: 5, bio: [], skills: 'a', date: 20260101, title: {}, walletAddress: true, proof: 1 },
  },
  { label: 'nested wrong types', body: { name: 'ok-name', skills: [{ name: { x: 1 }, price: [] }] } },
  { label: '100 KB string', body: { name: big, bio: big, title: big, date: big } },
  {
    label: '60 KB strings',
    body: { name: justUnderLimit, bio: justUnderLimit, title: justUnderLimit, date: '2026-01-01' },
  },
  { label: 'path-like name', body: { name: '../x', title: '../x', date: '../x', walletAddress: '../x' } },
  {
    label: 'SQL-like name',
    body: { name: "a'--", title: "a'--", date: "2026-01-01'--", walletAddress: "a'--" },
  },
  {
    label: 'prototype keys',
    body: JSON.parse(
      '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}},"name":7,"bio":7,"date":7}',
    ),
  },
  { label: 'deep nesting', body: JSON.parse(`${'['.repeat(500)}${']'.repeat(500)}`) },
]

/** Everything a client can read about the marketplace, to prove a refused request changed nothing. */
async function snapshot(call: Awaited<ReturnType<typeof testApp>>['call']) {
  const list = (await call('GET', '/api/community/agents?limit=100')).json
  const details = await Promise.all(
    list.agents.map(async (agent: { name: string }) => [
      (await call('GET', `/api/community/agents/${agent.name}`)).json,
      (await call('GET', `/api/agents/${agent.name}/agent-card.json`)).json,
      (await call('GET', `/api/agents/${agent.name}/milestones`)).json,
    ]),
  )
  const users = (await call('GET', '/api/community/users?limit=100')).json
  const profiles = await Promise.all(
    users.users.map(
      async (user: { username: string }) => (await call('GET', `/api/community/users/${user.username}`)).json,
    ),
  )
  const feed = (await call('GET', '/api/feed/live?limit=200')).json
  return JSON.stringify({ list, details, users, profiles, feed })
}

describe('hostile input on every endpoint', () => {
  test('error: never a 5xx, always a problem, and the marketplace is unchanged', async () => {
    const { call, register, pair } = await testApp()
    const scout = await register('Scout', {
      bio: 'b',
      skills: ['s', { name: 'p', type: 'purchasable', price: 0.5 }],
    })
    const other = await register('Other')
    const owner = privateKeyToAccount(generatePrivateKey())
    const ownerWallet = owner.address
    const paired = await pair('ann', other.pairingCode, owner)
    expect(paired.status).toBe(200)
    await call('POST', '/api/agents/Scout/milestones', {
      key: scout.key,
      body: { date: '2026-01-01', title: 'm' },
    })
    const before = await snapshot(call)
    const writes = [
      { method: 'POST', path: '/api/agents/register', key: undefined },
      { method: 'PUT', path: '/api/agents/Scout', key: scout.key },
      { method: 'PUT', path: '/api/agents/Scout', key: undefined },
      { method: 'PUT', path: '/api/agents/Scout', key: other.key },
      { method: 'POST', path: '/api/agents/Scout/milestones', key: scout.key },
      { method: 'POST', path: '/api/agents/Scout/milestones', key: 'amk_forged' },
      { method: 'PUT', path: "/api/agents/a'--", key: scout.key },
      { method: 'PUT', path: '/api/agents/..%2Fx', key: scout.key },
      { method: 'POST', path: '/api/agents/..%2F..%2Fetc/milestones', key: scout.key },
    ]
    const pairings = [
      {
        method: 'POST',
        path: '/api/community/users/bob/pair-agent',
        wallet: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
      },
      {
        method: 'POST',
        path: '/api/community/users/ann/pair-agent',
        wallet: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
      },
      { method: 'POST', path: "/api/community/users/a'--/pair-agent", wallet: ownerWallet },
      { method: 'PUT', path: '/api/community/users/ann', wallet: ownerWallet },
      { method: 'PUT', path: '/api/community/users/ghost', wallet: ownerWallet },
    ]
    const seen = new Set<number>()
    const attempts = [
      ...writes.map((write) => ({ ...write, headers: {} as Record<string, string> })),
      ...pairings.map(({ method, path, wallet }) => ({
        method,
        path,
        key: undefined,
        headers: { 'x-wallet-address': wallet },
      })),
    ]
    for (const { method, path, key, headers } of attempts) {
      for (const hostile of hostileBodies) {
        const body = hostile.body
        const response = await call(method, path, { body, headers: { ...headers, ...hostile.headers }, key })
        const where = `${method} ${path} with ${hostile.label}`
        expect([400, 401, 403, 404, 413, 415], where).toContain(response.status)
        expect(response.headers.get('content-type'), where).toBe('application/problem+json')
        expect(response.text, where).not.toContain(scout.key)
        expect(response.text, where).not.toMatch(/at .*\.ts:\d+/)
        seen.add(response.status)
      }
    }
    expect([...seen].sort()).toEqual([400, 401, 403, 404, 413, 415])
    const unknownOnly = await call('PUT', '/api/agents/Scout', {
      key: scout.key,
      body: { admin: true, apiKey: 'amk_x', name: 'Other' },
    })
    expect(unknownOnly.status).toBe(400)
    expect(unknownOnly.json.errors[0].pointer).toBe('/admin')
    expect(await snapshot(call)).toBe(before)
  })

  test('error: hostile paths and queries on reads are 400 or 404 problems', async () => {
    const { call } = await testApp()
    const paths = [
      '/api/community/agents/..%2F..%2Fetc%2Fpasswd',
      "/api/community/agents/a'--",
      '/api/community/agents/%F0%9F%98%80',
      `/api/community/agents/${'x'.repeat(5000)}`,
      '/api/agents/%25/agent-card.json',
      '/api/agents/..%2Fx/milestones',
      `/api/community/agents?q=${encodeURIComponent("'; DROP TABLE agents; --")}`,
      '/api/community/agents?limit[]=1',
      '/api/community/agents?limit=99999999999999999999',
      '/api/community/agents?offset=%00',
    ]
    for (const path of paths) {
      const response = await call('GET', path)
      expect(response.status, path).toBeLessThan(500)
      if (response.status >= 400)
        expect(response.headers.get('content-type'), path).toBe('application/problem+json')
    }
    expect((await call('GET', '/api/community/health')).status).toBe(200)
  })

  test('behavior: a heartbeat ignores any body it is sent', async () => {
    const { call, register } = await testApp()
    const { key } = await register('Scout')
    expect(
      (await call('POST', '/api/agents/Scout/heartbeat', { key, body: { status: 'off' } })).json.status,
    ).toBe('live')
  })
})
