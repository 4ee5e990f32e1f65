import { type EIP1193RequestFn, TimeoutError, type Transport } from 'viem'
import { chainBudgetExpiry, chainCallTimeout } from '../ports/chainBudget.ts'

/** The bound of one call when its transport names none: viem's default timeout. */
const DEFAULT_CALL_BOUND_MS = 10_000

/**
 * The calls that send a transaction. Once a request has signed and recorded one, it is always handed to the RPC (a
 * recorded hash that was never sent could not pay); the request then waits for the answer only as long as its budget
 * lasts, and the chain says later what became of it.
 */
const SENDS = new Set(['eth_sendRawTransaction', 'eth_sendRawTransactionSync', 'eth_sendTransaction'])

/** viem's TimeoutError for a call the request's chain budget gave up on (it names no URL: it may carry a key). */
export const budgetTimeout = (body: object) =>
  new TimeoutError({ body: body as Record<string, unknown>, url: "(the request's chain budget)" })

/**
 * `start(timeoutMs)`'s result, where `timeoutMs` is what the request's chain budget leaves of `boundMs`; given up with
 * viem's TimeoutError when the budget is spent first (`start` goes on, unheard). Once the budget is spent, `start` is
 * not called, unless `always` (a broadcast). Outside any budget it is `start(boundMs)`.
 * @example await withinChainBudget(30_000, (timeout) => client.waitForTransactionReceipt({ hash, timeout }), { hash })
 */
export function withinChainBudget<T>(
  boundMs: number,
  start: (timeoutMs: number) => Promise<T>,
  body: object,
  always = false,
): Promise<T> {
  const timeoutMs = chainCallTimeout(boundMs)
  if (timeoutMs >= boundMs) return start(boundMs)
  if (timeoutMs <= 0 && !always) return Promise.reject(budgetTimeout(body))
  const expiry = chainBudgetExpiry()
  return new Promise<T>((resolve, reject) => {
    void expiry?.then(() => reject(budgetTimeout(body)))
    start(Math.max(1, timeoutMs)).then(resolve, reject)
  })
}

/**
 * `transport` whose calls share the chain budget of the request they are made in (ports/chainBudget.ts): each waits
 * at most what remains of it (and never more than the transport's own timeout); once it is spent a read fails at once
 * with viem's TimeoutError, unsent. Outside any budget the transport behaves as it is.
 * @example createPublicClient({ transport: budgetedTransport(http(rpcUrl, { retryCount: 0 })) })
 */
export function budgetedTransport<T extends Transport>(transport: T): T {
  const wrapped: Transport = (options) => {
    const inner = transport(options)
    const boundMs = inner.config.timeout ?? DEFAULT_CALL_BOUND_MS
    const request = ((args, requestOptions) =>
      withinChainBudget(
        boundMs,
        () => inner.request(args, requestOptions),
        args,
        SENDS.has(args.method),
      )) as EIP1193RequestFn
    return { ...inner, request }
  }
  return wrapped as T
}
