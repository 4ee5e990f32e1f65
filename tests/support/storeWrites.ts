import type { Store } from '../../packages/core/src/index.ts'
import { STORE_READ_METHODS } from '../../packages/core/src/ports/storeReads.ts'

/** The store's writes by method, counted while `counting` is on (reads are left out). */
export function countedWrites(store: Store) {
  const writes: string[] = []
  const state = { counting: false, writes }
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof name !== 'string' || typeof value !== 'function' || STORE_READ_METHODS.has(name))
        return typeof value === 'function' ? value.bind(target) : value
      return (...args: unknown[]) => {
        if (state.counting) writes.push(name)
        return value.apply(target, args)
      }
    },
  })
  return { store: counted, state }
}
