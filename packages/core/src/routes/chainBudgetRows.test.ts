import { describe, expect, test } from 'bun:test'
import type { MarketplaceActions } from '../Marketplace.ts'
import { chainCallTimeout } from '../ports/chainBudget.ts'
import { mayReachChain, withChainBudget } from './chainBudgetRows.ts'
import { MARKET_ROUTES } from './marketRoutes.ts'
import type { RouteCall, RouteRow } from './RouteRow.ts'

/** A row whose call answers the timeout a chain call it made now would get (10 s outside any budget). */
const probe = (facts: Pick<RouteRow, 'method' | 'auth' | 'optionalAuth'>): RouteRow =>
  ({
    id: 'probe',
    path: '/probe',
    summary: '',
    description: '',
    tag: 'Agents',
    ok: { status: 200, response: 'Agent', description: '' },
    problems: [],
    ...facts,
    call: async () => ({ body: chainCallTimeout(10_000) }),
  }) as RouteRow

const market = { config: { chain: { requestBudgetMs: 300 } } } as unknown as MarketplaceActions
const timeoutOf = async (row: RouteRow) =>
  ((await withChainBudget(row).call(market, {} as RouteCall)) as { body: number }).body

describe('chain budget rows', () => {
  test('behavior: writes and wallet-proved reads run under the request budget; public reads need none', async () => {
    expect(await timeoutOf(probe({ method: 'POST', auth: 'none' }))).toBeLessThanOrEqual(300)
    expect(await timeoutOf(probe({ method: 'GET', auth: 'walletSignature' }))).toBeLessThanOrEqual(300)
    expect(
      await timeoutOf(probe({ method: 'GET', auth: 'none', optionalAuth: 'bearerOrWalletSignature' })),
    ).toBeLessThanOrEqual(300)
    expect(await timeoutOf(probe({ method: 'GET', auth: 'none' }))).toBe(10_000)
    expect(await timeoutOf(probe({ method: 'GET', auth: 'bearer' }))).toBe(10_000)
  })

  test('behavior: the market rows without a budget are reads of the store alone, the budgeted ones every write and proof', () => {
    const unbudgeted = MARKET_ROUTES.filter((row) => !mayReachChain(row)).map((row) => row.id)
    expect(unbudgeted).toContain('getAgentCard')
    expect(unbudgeted).toContain('getTask')
    for (const row of MARKET_ROUTES.filter((row) => !mayReachChain(row))) expect(row.method).toBe('GET')
    // Reads a wallet proves may check a contract wallet's signature on the chain.
    expect(unbudgeted).not.toContain('getBudget')
    expect(unbudgeted).not.toContain('getInvite')
  })
})
