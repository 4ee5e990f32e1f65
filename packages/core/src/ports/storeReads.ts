/**
 * The Store methods that change nothing a public read shows: the reads, and the re-check claim (it moves only a
 * task's next check time, and runs every second). Any other method may, so a store's change version
 * (StoreLifecycle) moves when one of them is called, and this process's readers see its own writes at once.
 */
export const STORE_READ_METHODS: ReadonlySet<string> = new Set([
  'getAgent',
  'findAgentNameByKeyHash',
  'listAgents',
  'nextLivenessChange',
  'listPaidOffers',
  'listAgentsOwnedBy',
  'listMilestones',
  'findSkillSellers',
  'findAgentByPairingCodeHash',
  'getUser',
  'findUserByInviteCode',
  'listUsers',
  'listEvents',
  'getTask',
  'findTaskIdByTxHash',
  'findIdempotentAnswer',
  'listTasks',
  'listDueRechecks',
  'claimDueRechecks',
  'countPendingChecks',
  'getMail',
  'kvGet',
  'changeVersion',
  'ping',
  'close',
  'watchEvents',
])

/**
 * `store` with `after` run once each method not in STORE_READ_METHODS has returned or thrown (a write may have landed
 * either way): how a store keeps its change version, or other bookkeeping, after its writes.
 * @example const counted = afterEachWrite(store, () => { writes++ })
 */
export function afterEachWrite<S extends object>(store: S, after: () => void | Promise<void>): S {
  const wrapped = { ...store }
  for (const [name, method] of Object.entries(store) as [string, unknown][]) {
    if (STORE_READ_METHODS.has(name) || typeof method !== 'function') continue
    Object.assign(wrapped, {
      [name]: async (...args: unknown[]) => {
        try {
          return await (method as (...values: unknown[]) => Promise<unknown>)(...args)
        } finally {
          await after()
        }
      },
    })
  }
  return wrapped
}
