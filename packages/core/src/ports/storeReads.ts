/**
 * The Store methods that only read. Any other method may write, so a store's change version (StoreLifecycle) moves
 * when one of them is called, and this process's readers see its own writes at once.
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
  'countPendingChecks',
  'getMail',
  'kvGet',
  'changeVersion',
  'ping',
  'close',
  'watchEvents',
])
