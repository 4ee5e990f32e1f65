// A careful client's answer to a dependency fault: a write carries an Idempotency-Key, and a 503 `database_unavailable`,
// `outcome_unknown` or `chain_unavailable` is sent again under the same key after its Retry-After, so it never runs
// twice; so is a 409 `idempotency_key_in_use` (the first send is still under way: the resend gets its answer). A PostgreSQL
// node sheds a burst it cannot serve within a request's bound (docs/operations.md), and a loaded machine sheds more:
// tests whose subject is not the database's faults send through this, so their verdict does not depend on the
// machine's speed. Counted, not timed.

/** The 503s of a dependency fault, which a client sends again under the same Idempotency-Key. */
const DEPENDENCY_FAULTS = new Set(['database_unavailable', 'outcome_unknown', 'chain_unavailable'])

/** How many times a request is sent at most while a dependency answers a fault. */
const FAULT_RETRIES = 20

/**
 * The answers (status and code) that leave a write's outcome unknown after a careful client's resends: a loaded node
 * could not finish it in its bound, and the client is told to read what it wrote. A test judges those by reading.
 */
export const UNKNOWN_OUTCOMES: ReadonlySet<string> = new Set([
  '503 outcome_unknown',
  '409 idempotency_outcome_unknown',
])

/** One answer: its status, headers and JSON body (null when empty). */
export type CarefulAnswer<T> = { status: number; headers: Headers; json: T }

/**
 * Sends `init` to `url` (a string body, so it can be sent again) until the answer is not a dependency fault, at most
 * FAULT_RETRIES times; a write without an Idempotency-Key gets one.
 * @example const answer = await carefulFetch(`${base}/api/agents/register`, { method: 'POST', body })
 */
export async function carefulFetch<T = unknown>(
  url: string,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<CarefulAnswer<T>> {
  const headers = { ...init.headers }
  if (init.method !== 'GET' && !Object.keys(headers).some((name) => name.toLowerCase() === 'idempotency-key'))
    headers['idempotency-key'] = crypto.randomUUID()
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(url, { method: init.method, headers, body: init.body })
    const text = await response.text()
    const json = text ? JSON.parse(text) : null
    const code = (json as { code?: string } | null)?.code ?? ''
    const fault =
      (response.status === 503 && DEPENDENCY_FAULTS.has(code)) ||
      (response.status === 409 && code === 'idempotency_key_in_use')
    if (!fault || attempt >= FAULT_RETRIES)
      return { status: response.status, headers: response.headers, json }
    await Bun.sleep(Number(response.headers.get('retry-after') ?? 1) * 1000)
  }
}
