import { StorageFullError, StoreUnavailableError } from '../errors.ts'
import { currentScope, inScope, scopeOutsideRequests } from './requestScope.ts'
import { STORE_READ_METHODS } from './storeReads.ts'

// Whether a store fault may say "nothing changed" is a fact about the whole request, not the one store call that
// failed: a request that committed one write and then lost the database changed something. Each request's writes are
// counted in its scope (requestScope.ts), so the actions need not pass anything along.

/** A fault that says nothing changed, told again as an unknown outcome: an earlier write of the request landed. */
function afterAWrite(error: unknown): unknown {
  const unchanged =
    (error instanceof StoreUnavailableError && error.outcome === 'unchanged') ||
    error instanceof StorageFullError
  if (!unchanged) return error
  return new StoreUnavailableError('unknown', { cause: error, retryAfterSeconds: error.retryAfterSeconds })
}

/** A bug, not a fault: two write scopes of one request ran side by side, and one restored the other's count. */
class WriteScopesOverlapError extends Error {
  override readonly name = 'WriteScopesOverlapError'
  constructor() {
    super(
      'write scopes of one request ran side by side: each must close before the one around it (writeScope.ts)',
    )
  }
}

/**
 * Runs `work` as one request's writes: a store fault answered as "nothing changed" (503 `database_unavailable`, 507
 * `storage_full`) after a write of the same request may have landed becomes 503 `outcome_unknown`. In a request, the
 * count is a field of its scope, set for `work` and restored after it (no scope is entered: write scopes of one request
 * nest, never run side by side); what `work` wrote counts as written by the scope around it too. Write scopes that
 * close out of turn (side by side: one closes while one opened after it is still open) throw WriteScopesOverlapError,
 * both of them: the first one's restore stopped the other's count.
 * @example await inWriteScope(() => row.call(market, call))
 */
export async function inWriteScope<T>(work: () => Promise<T>): Promise<T> {
  const scope = currentScope()
  if (!scope) return inScope(scopeOutsideRequests(), () => inWriteScope(work))
  const { writing, wrote } = scope
  const depth = ++scope.writeDepth
  scope.writing = true
  scope.wrote = false
  try {
    return await work()
  } catch (error) {
    throw scope.wrote ? afterAWrite(error) : error
  } finally {
    scope.writing = writing
    scope.wrote ||= wrote
    const nested = scope.writeDepth === depth
    scope.writeDepth -= 1
    // biome-ignore lint/correctness/noUnsafeFinally: an overlap is a bug in the caller, louder than its outcome
    if (!nested) throw new WriteScopesOverlapError()
  }
}

/** `method` of `store`, its outcome counted in the write scope it runs in (countWrites). */
function counted(store: object, method: (...values: unknown[]) => Promise<unknown>) {
  return async (...args: unknown[]) => {
    const scope = currentScope()
    if (!scope?.writing) return method.apply(store, args)
    try {
      const result = await method.apply(store, args)
      scope.wrote = true
      return result
    } catch (error) {
      const landed = error instanceof StoreUnavailableError && error.outcome === 'unknown'
      const answer = scope.wrote ? afterAWrite(error) : error
      if (landed) scope.wrote = true
      throw answer
    }
  }
}

/**
 * `store` whose writes are counted in the write scope they run in (inWriteScope): a write that returned, or that
 * failed with an unknown outcome, may have landed; outside any scope the store behaves as it is. Every method is
 * looked up on `store` at each call, so a method replaced later (a test's fault) is the one called.
 * @example const counted = countWrites(memoryStore())
 */
export function countWrites<S extends object>(store: S): S {
  const wrappers = new Map<string, { method: unknown; wrapper: unknown }>()
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof name !== 'string' || typeof value !== 'function') return value
      const known = wrappers.get(name)
      if (known?.method === value) return known.wrapper
      const method = value as (...values: unknown[]) => Promise<unknown>
      // Called on the store itself, never on the proxy: a class's private fields stay reachable.
      const wrapper = STORE_READ_METHODS.has(name) ? method.bind(target) : counted(target, method)
      wrappers.set(name, { method: value, wrapper })
      return wrapper
    },
  })
}
