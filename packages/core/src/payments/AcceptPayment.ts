/** One range of an `Accept-Payment` header: a method and an intent (either may be `*`) and its weight. */
type PaymentRange = { method: string; intent: string; q: number }

const TOKEN = /^([a-z0-9-]+|\*)\/([a-z0-9-]+|\*)$/

/** The ranges of an `Accept-Payment` header (MPP core draft), or null when it is absent or malformed. */
export function parseAcceptPayment(header: string | null): PaymentRange[] | null {
  if (header === null || header.trim() === '') return null
  const ranges: PaymentRange[] = []
  for (const item of header.split(',')) {
    const [token = '', ...parameters] = item.split(';').map((part) => part.trim().toLowerCase())
    const match = TOKEN.exec(token)
    if (!match) return null
    let q = 1
    for (const parameter of parameters) {
      const weight = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/.exec(parameter)
      if (!weight) return null
      q = Number(weight[1])
    }
    ranges.push({ method: match[1] ?? '', intent: match[2] ?? '', q })
  }
  return ranges
}

/**
 * Whether a client's `Accept-Payment` takes `method`/`intent`: the most specific range that matches decides (its
 * `q` above 0); an absent or malformed header takes everything, as the draft says.
 */
export function acceptsPayment(header: string | null, method: string, intent: string): boolean {
  const ranges = parseAcceptPayment(header)
  if (ranges === null) return true
  const specificity = (range: PaymentRange) => (range.method !== '*' ? 2 : 0) + (range.intent !== '*' ? 1 : 0)
  const matching = ranges
    .filter(
      (range) =>
        (range.method === '*' || range.method === method) &&
        (range.intent === '*' || range.intent === intent),
    )
    .sort((a, b) => specificity(b) - specificity(a))
  return (matching[0]?.q ?? 0) > 0
}
