/**
 * The Store methods that only read. A store's change version (StoreLifecycle) stays as it is when they are called.
 */
export const STORE_READ_METHODS: ReadonlySet<string> = new Set([
  'getAgent',
  'getSellerSkill',
  'findAgentNameByKeyHash',
  'listAgents',
  'syncAgents',
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
  'getTaskByEscrowJob',
  'findTaskIdByTxHash',
  'findIdempotentAnswer',
  'listTasks',
  'listRatedTasks',
  'listDueJobs',
  'listDueRechecks',
  'budgetUsage',
  'buyerDecisions',
  'countPendingChecks',
  'getMail',
  'listWebhooks',
  'webhooksFor',
  'listDeliveries',
  'kvGet',
  'changeVersion',
  'ping',
  'close',
  'watchEvents',
])

/**
 * The Store writes that change nothing a public read shows (agents, skills, milestones, users) and write no feed
 * event: the background passes' claims and outcomes (re-checks every second, webhook deliveries every 250 ms, the
 * mail outbox every second) and the kv. Counting them as changes emptied every read cache four times a second on an
 * idle server (bench/CHANGES.md, "Background passes").
 */
export const STORE_UNSHOWN_WRITES: ReadonlySet<string> = new Set([
  'claimDueRechecks',
  'enqueueDeliveries',
  'claimDueDeliveries',
  'settleDelivery',
  'claimDueMail',
  'settleMail',
  'kvPut',
  'kvDelete',
  'kvUpdate',
  'kvUpdateAll',
  'kvSweepExpired',
])

/**
 * `store` with `after` run once each method that may change what a public read shows (in neither STORE_READ_METHODS
 * nor STORE_UNSHOWN_WRITES) has returned or thrown (a write may have landed either way): how a store keeps its change
 * version, or other bookkeeping, after its writes.
 * @example const counted = afterEachWrite(store, () => { writes++ })
 */
export function afterEachWrite<S extends object>(store: S, after: () => void | Promise<void>): S {
  const wrapped = { ...store }
  for (const [name, method] of Object.entries(store) as [string, unknown][]) {
    if (STORE_READ_METHODS.has(name) || STORE_UNSHOWN_WRITES.has(name) || typeof method !== 'function')
      continue
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
