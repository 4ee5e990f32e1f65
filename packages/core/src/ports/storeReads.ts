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
