import type { Store } from '../../packages/core/src/index.ts'
import { STORE_READ_METHODS } from '../../packages/core/src/ports/storeReads.ts'

/**
 * The store's writes by method, counted while `counting` is on (reads are left out); `overlaps` lists each write
 * begun while another was still under way, as [the one under way, the one begun] (a store that commits together
 * lands such writes in one commit).
 */
export function countedWrites(store: Store) {
  const writes: string[] = []
  const overlaps: [string, string][] = []
  const state = { counting: false, writes, overlaps }
  const underWay: string[] = []
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver)
      if (typeof name !== 'string' || typeof value !== 'function' || STORE_READ_METHODS.has(name))
        return typeof value === 'function' ? value.bind(target) : value
      return (...args: unknown[]) => {
        if (!state.counting) return value.apply(target, args)
        writes.push(name)
        for (const other of underWay) overlaps.push([other, name])
        underWay.push(name)
        const ended = () => void underWay.splice(underWay.indexOf(name), 1)
        const result = value.apply(target, args)
        if (result instanceof Promise) return result.finally(ended)
        ended()
        return result
      }
    },
  })
  return { store: counted, state }
}
