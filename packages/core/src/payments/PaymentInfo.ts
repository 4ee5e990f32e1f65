import type { PaidOffer } from '../actions/tasks/index.ts'
import { formatAmount } from '../Money.ts'

/** The path and the `x-payment-info` of one paid offer: what an MPP client needs to buy it. */
export function paymentInfoOf(offer: PaidOffer) {
  const description = `${offer.name} by ${offer.agent}: ${formatAmount(offer.amountBaseUnits)} USDC.e`
  return {
    path: `/api/agents/${encodeURIComponent(offer.agent)}/tasks/${offer.slug}`,
    description,
    info: {
      amount: offer.amountBaseUnits.toString(),
      method: 'tempo',
      intent: 'charge',
      currency: offer.currency,
      description,
    },
  }
}

/** A page of paid offers as listings show them: each with its path and `x-payment-info`. */
export function paidOfferListing(page: { offers: PaidOffer[]; next: string | null }) {
  return {
    offers: page.offers.map((offer) => {
      const { path, info } = paymentInfoOf(offer)
      return {
        agent: offer.agent,
        skill: offer.name,
        slug: offer.slug,
        description: offer.description,
        path,
        'x-payment-info': info,
      }
    }),
    next: page.next,
  }
}
