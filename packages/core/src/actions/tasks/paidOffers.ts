import * as v from 'valibot'
import type { PaidOfferPage } from '../../payments/PaymentInfo.ts'
import type { AgentStore, StoreLifecycle } from '../../ports/Store.ts'
import { readCache } from '../../ReadCache.ts'
import { pageNumber, parseInput, strictFields } from '../../Validation.ts'
import type { ActionContext } from '../context.ts'

/** Query of a page of paid offers: `limit` 1-100, `after` the `next` cursor of the page before. */
export const PaidOfferQuery = strictFields({
  limit: v.optional(pageNumber(1, 100)),
  after: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.regex(/^[a-z0-9_-]{2,50}\/[a-z0-9-]{1,64}$/, 'must be the `next` cursor of a page: agent/slug'),
    ),
  ),
})

/** The `paidOffers` action: what row 12 sells, a page at a time. */
export function paidOffersAction(context: ActionContext<AgentStore & StoreLifecycle>) {
  const { store, clock } = context
  const offerPages = readCache<PaidOfferPage>()
  /**
   * A page of what row 12 sells (purchasable skills of agents with a wallet, when machine payments are on), by
   * agent and slug: at most `limit` (1-100, default 100) after the cursor `after`; `next` is the cursor of the page
   * after this one, null at the end. Cost is one page, whatever the market's size.
   * @example const { offers, next } = await market.paidOffers({ limit: 50 })
   */
  return async function paidOffers(query: unknown = {}): Promise<PaidOfferPage> {
    const { limit = 100, after } = parseInput(PaidOfferQuery, query, 'invalid_query')
    const mpp = context.mpp
    if (!mpp) return { offers: [], next: null }
    // Offers change only with agents and skills: the page is kept under the store's change version, so an unchanged
    // page is the same object (hosts serialize it once).
    return offerPages.read(
      `${limit}/${after ?? ''}`,
      await store.changeVersion?.(),
      clock.now(),
      async () => {
        const [agentKey = '', slug = ''] = after ? after.split('/') : []
        const rows = await store.listPaidOffers(after ? { agentKey, slug } : null, limit + 1)
        const offers = rows
          .slice(0, limit)
          .map(({ agentKey: _key, ...offer }) => ({ ...offer, currency: mpp.currency }))
        const last = rows[limit - 1]
        const next = rows.length > limit && last ? `${last.agentKey}/${last.slug}` : null
        return { value: { offers, next }, validUntil: Number.POSITIVE_INFINITY }
      },
    )
  }
}
