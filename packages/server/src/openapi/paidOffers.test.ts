import { describe, expect, test } from 'bun:test'
import type { PaidOffer } from '@agentmarket/core'
import { validate } from '@readme/openapi-parser'
import fc from 'fast-check'
import { testApp } from '../testing/http.ts'
import { openapiDocument, withPaidOperations } from './document.ts'

const USDC_E = '0x20C000000000000000000000b9537d11c60E8b50'
const WALLET = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const MPP = {
  secretKey: 'paid-offers-test-secret-of-at-least-32-bytes',
  realm: 'localhost',
  currency: USDC_E,
  getClient: () => {
    throw new Error('no payment is made here')
  },
} as const

/** A market selling `agents` x 3 paid skills (and a free one each), machine payments on. */
async function sellingMarket(agents: number) {
  const app = await testApp(undefined, { mpp: MPP })
  const skills = ['Alpha', 'Beta', 'Gamma'].map((name) => ({ name, type: 'purchasable', price: '0.5' }))
  for (let index = 0; index < agents; index++) {
    const name = `seller-${String(index).padStart(3, '0')}`
    const { key } = await app.register(name, { skills: [...skills, 'Free'] })
    await app.call('PUT', `/api/agents/${name}`, { key, body: { walletAddress: WALLET } })
  }
  return app
}

describe('paid offers: a bounded document and a paged listing', () => {
  test('behavior: the document holds the first 100 offers and says where the rest are; the listing pages through all, once each', async () => {
    const app = await sellingMarket(40)
    const document = (await app.call('GET', '/api/openapi.json')).json
    const paid = Object.values(
      document.paths as Record<string, { post?: { 'x-payment-info'?: unknown } }>,
    ).filter((item) => item.post?.['x-payment-info'])
    expect(paid.length).toBe(100)
    expect(document['x-paid-offers']).toEqual({ href: '/api/paid-offers', listed: 100, complete: false })

    const seen: string[] = []
    let after: string | null = null
    for (let pages = 0; pages < 10; pages++) {
      const query: string = after ? `?limit=50&after=${encodeURIComponent(after)}` : '?limit=50'
      const page = (await app.call('GET', `/api/paid-offers${query}`)).json
      for (const offer of page.offers) {
        expect(offer['x-payment-info']).toMatchObject({ amount: '500000', method: 'tempo', currency: USDC_E })
        seen.push(offer.path)
      }
      after = page.next
      if (after === null) break
    }
    expect(seen.length).toBe(120)
    expect(new Set(seen).size).toBe(120)
    expect(seen.every((path) => /^\/api\/agents\/seller-\d{3}\/tasks\/(alpha|beta|gamma)$/.test(path))).toBe(
      true,
    )
  })

  test('error: a malformed cursor or limit is a 400 naming the field', async () => {
    const app = await sellingMarket(1)
    for (const query of ['?after=nope', '?after=a%2Fb%2Fc', '?limit=0', '?limit=101'])
      expect((await app.call('GET', `/api/paid-offers${query}`)).status).toBe(400)
  })

  test('property: operation ids are unique for any agent names and slugs (ab_cd + ef, ab + cd-ef), and the document stays valid', async () => {
    const { app } = await testApp()
    const base = openapiDocument(app, { baseUrl: 'http://localhost:3000' })
    const agent = fc.stringMatching(/^[A-Za-z0-9_-]{2,12}$/)
    const slug = fc.stringMatching(/^[a-z0-9]{1,4}(-[a-z0-9]{1,4}){0,2}$/)
    const collisions: [string, string][] = [
      ['ab_cd', 'ef'],
      ['ab', 'cd-ef'],
      ['ab-cd', 'ef'],
    ]
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.tuple(agent, slug), { maxLength: 12 }), async (drawn) => {
        // Agent names are unique without regard to case, as the registry keeps them.
        const names = new Map<string, [string, string]>()
        for (const [name, skill] of [...collisions, ...drawn])
          names.set(`${name.toLowerCase()}/${skill}`, [name, skill])
        const offers: PaidOffer[] = [...names.values()].map(([name, skill]) => ({
          agent: name,
          slug: skill,
          name: skill,
          description: null,
          amountBaseUnits: 1n,
          currency: USDC_E,
          input: null,
        }))
        const document = withPaidOperations(base, { offers, next: null })
        const ids = Object.values(document.paths).flatMap((item) =>
          Object.values(item as Record<string, { operationId?: string }>).map(
            (operation) => operation.operationId,
          ),
        )
        expect(new Set(ids).size).toBe(ids.length)
        expect((await validate(structuredClone(document) as never)).valid).toBe(true)
      }),
      { numRuns: 25 },
    )
  })
})
