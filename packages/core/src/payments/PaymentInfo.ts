import { formatAmount } from '../Money.ts'

/** One purchasable skill an agent sells by machine payment: one paid operation of the OpenAPI document. */
export type PaidOffer = {
  agent: string
  slug: string
  name: string
  description: string | null
  amountBaseUnits: bigint
  currency: string
  /** The skill's input JSON Schema (the operation's params); null: any params. */
  input: Record<string, unknown> | null
}

/** One page of paid offers, and the cursor of the next (null at the end). */
export type PaidOfferPage = { offers: PaidOffer[]; next: string | null }

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
