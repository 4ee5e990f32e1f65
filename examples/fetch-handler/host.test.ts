import { describe, expect, test } from 'bun:test'
import { jsonCaller } from '../../tests/support/examples.ts'
import type shared from './index.ts'

// A module instance of its own (the query makes a new one), so the request below is the very first it serves.
const fresh: string = './index.ts?first-request'
const { default: handler } = (await import(fresh)) as { default: typeof shared }

// Attack (SECURITY.md "Attacks tried"): on Workers the marketplace is made on the first request, so if its public
// address came from that request, whoever sent it with a forged Host would have every card and signed proof name
// the attacker's domain. The address comes from BASE_URL, never from a request.

const env = { BASE_URL: 'https://market.example' }
const forged = jsonCaller('https://attacker.example', (request) => handler.fetch(request, env))

describe('fetch handler: the public address', () => {
  test('attack: a forged Host on the first request names nothing: cards and proofs name BASE_URL', async () => {
    const registered = await forged('POST', '/api/agents/register', {
      body: { name: 'hosted', skills: [{ name: 'Report', type: 'purchasable', price: 1 }] },
    })
    expect(registered.status).toBe(200)
    await forged('PUT', '/api/agents/hosted', {
      key: registered.json.apiKey,
      body: { walletAddress: '0x1111111111111111111111111111111111111111' },
    })
    const card = await forged('GET', '/api/agents/hosted/agent-card.json')
    const order = await forged('POST', '/api/agents/hosted/tasks', { body: { skill: 'report' } })
    expect(card.status).toBe(200)
    expect(order.status).toBe(201)
    for (const answer of [registered, card, order]) {
      expect(JSON.stringify(answer.json)).not.toContain('attacker.example')
    }
    expect(JSON.stringify(card.json)).toContain('https://market.example/')
    // What a payer signs names the configured market.
    expect(order.json.payment.payer_proof.message.market).toBe('https://market.example')
  })
})
