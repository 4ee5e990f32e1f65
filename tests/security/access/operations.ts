import type { Credentials, Principal, World, WorldAgent } from './world.ts'

// One request builder per operation of the route table: given the world and who asks, the path parameters, query and
// body of that principal's request. Credentials (API key, wallet proof) are added by each interface's driver, the
// same way for every operation; a builder overrides them only when the cell targets a new agent it made.

/** One cell's request, whatever interface carries it. */
export type CellRequest = {
  params?: Record<string, string>
  query?: Record<string, string>
  body?: Record<string, unknown>
  /** Credentials replacing the principal's own for this cell (the seller of a new agent holds that agent's key). */
  as?: Partial<Credentials>
  /** Undoes what an allowed cell made that would fill a limit (webhook endpoints), or leaves nothing behind. */
  cleanup?: () => Promise<void>
}

/** Builds the request of one principal for one operation (it may make what the cell uses up: an agent, a task). */
export type Builder = (world: World, who: Principal) => Promise<CellRequest>

/** A task id no order has, for principals that hold none. */
const UNKNOWN_TASK = `task_${'0'.repeat(32)}`
const TX_HASH = `0x${'ab'.repeat(32)}`
let counter = 0
const unique = (prefix: string) => `${prefix}-${++counter}`

/** The task id a principal presents: its own order's, else one nobody holds. */
const taskOf = (world: World, who: Principal) => world.principals[who].task ?? UNKNOWN_TASK

/** The task a principal presents for a new order of the seller: the seller and the buyer hold it, the rest their own. */
const heldTask = (fresh: string, world: World, who: Principal) =>
  who === 'seller' || who === 'buyer' ? fresh : taskOf(world, who)

/** Credentials for a cell on a new agent: its seller holds its key. */
const sellerOf = (agent: WorldAgent, who: Principal): Partial<Credentials> | undefined =>
  who === 'seller' ? { key: agent.key } : undefined

const sellerPath = (world: World) => ({ name: world.seller.name })

/** Reads a task as the buyer (its typed data to sign). */
async function readTask(world: World, id: string) {
  const { json } = await world.call('GET', `/api/agents/${world.seller.name}/tasks/${id}`)
  return json
}

/** A decision on a new delivered task under review, signed by the principal's wallet. */
function decision(kind: 'accept' | 'reject'): Builder {
  return async (world, who) => {
    const fresh = await world.freshTask({ review: true, delivered: true })
    const { review } = await readTask(world, fresh)
    const reason = 'checked by the access matrix'
    const signature = await world.principals[who].wallet.signTypedData({
      ...review,
      message: { ...review.message, decision: kind, reason },
    })
    return {
      params: { ...sellerPath(world), id: heldTask(fresh, world, who) },
      body: { reason, signature },
    }
  }
}

/** Deletes a webhook through the seller's path, whoever asks (cleanup; 404 when already gone). */
const deleteHook = (world: World, path: string, key?: string) => async () => {
  await world.call('DELETE', path, key ? { key } : {})
}

/** The request builder of every operation, by operationId. */
export const BUILDERS: Record<string, Builder> = {
  apiIndex: async () => ({}),
  health: async () => ({}),
  live: async () => ({}),
  ready: async () => ({}),
  listAgents: async () => ({ query: { limit: '50' } }),
  getAgent: async (world) => ({ params: sellerPath(world) }),
  getAgentCard: async (world) => ({ params: sellerPath(world) }),
  getAgentRegistration: async (world) => ({ params: sellerPath(world) }),
  getAgentA2aCard: async (world) => ({ params: sellerPath(world) }),
  registerAgent: async (_world, who) => ({ body: { name: unique(`reg-${who.toLowerCase()}`) } }),
  updateAgent: async (world, who) => ({ params: sellerPath(world), body: { bio: `edited by ${who}` } }),
  heartbeat: async (world) => ({ params: sellerPath(world) }),
  issuePairingCode: async (world, who) => {
    const agent = await world.freshAgent({ paired: false })
    return { params: { name: agent.name }, as: sellerOf(agent, who) }
  },
  rotateApiKey: async (world, who) => {
    const agent = await world.freshAgent()
    return { params: { name: agent.name }, as: sellerOf(agent, who) }
  },
  recordMilestone: async (world) => ({
    params: sellerPath(world),
    body: { date: '2026-05-01', title: 'matrix' },
  }),
  listMilestones: async (world) => ({ params: sellerPath(world) }),
  createTask: async (world, who) => ({
    params: sellerPath(world),
    body: { skill: 'echo', buyer_wallet: world.principals[who].wallet.address },
  }),
  listTasks: async (world) => ({ params: sellerPath(world), query: { status: 'all', limit: '100' } }),
  orderWithPayment: async (world) => ({ params: { ...sellerPath(world), id: 'report' }, body: {} }),
  getTask: async (world, who) => ({ params: { ...sellerPath(world), id: taskOf(world, who) } }),
  verifyPayment: async (world, who) => {
    const { json } = await world.call('POST', `/api/agents/${world.seller.name}/tasks`, {
      body: { skill: 'report' },
    })
    const proof = json.payment.payer_proof
    const signature = await world.principals[who].wallet.signTypedData({
      ...proof,
      message: { ...proof.message, txHash: TX_HASH },
    })
    return {
      params: { ...sellerPath(world), id: heldTask(json.task_id, world, who) },
      body: { tx_hash: TX_HASH, payer_signature: signature },
    }
  },
  completeTask: async (world, who) => {
    const fresh = await world.freshTask()
    return {
      params: { ...sellerPath(world), id: heldTask(fresh, world, who) },
      body: { result_url: 'https://results.example/matrix' },
    }
  },
  acceptDelivery: decision('accept'),
  rejectDelivery: decision('reject'),
  recordRefund: async (world, who) => ({
    params: { ...sellerPath(world), id: taskOf(world, who) },
    body: { tx_hash: TX_HASH, reason: 'matrix' },
  }),
  rateTask: async (world, who) => {
    const signature = await world.principals[who].wallet.signMessage({ message: 'no rate typed data' })
    return { params: { ...sellerPath(world), id: taskOf(world, who) }, body: { score: 1, signature } }
  },
  listRatings: async (world) => ({ params: sellerPath(world) }),
  withdrawListing: async (world, who) => {
    const agent = await world.freshAgent()
    return { params: { name: agent.name }, as: sellerOf(agent, who) }
  },
  setBudget: async (world, who) => ({
    params: sellerPath(world),
    body: await world.budgetBody(world.principals[who].wallet),
  }),
  getBudget: async (world) => ({ params: sellerPath(world) }),
  addWebhook: async (world) => {
    const url = `https://${unique('hook')}.example.com/in`
    return {
      params: sellerPath(world),
      body: { url },
      // An added endpoint is deleted again: a seller has at most 10.
      cleanup: async () => {
        const { json } = await world.call('GET', `/api/agents/${world.seller.name}/webhooks`, {
          key: world.seller.key,
        })
        const added = json.webhooks.find((hook: { url: string }) => hook.url === url)
        if (added)
          await deleteHook(world, `/api/agents/${world.seller.name}/webhooks/${added.id}`, world.seller.key)()
      },
    }
  },
  listWebhooks: async (world) => ({ params: sellerPath(world) }),
  deleteWebhook: async (world) => {
    const path = `/api/agents/${world.seller.name}/webhooks`
    const { json } = await world.call('POST', path, {
      key: world.seller.key,
      body: { url: `https://${unique('doomed')}.example.com/in` },
    })
    return {
      params: { ...sellerPath(world), id: json.id },
      cleanup: deleteHook(world, `${path}/${json.id}`, world.seller.key),
    }
  },
  addTaskWebhook: async (world, who) => {
    const fresh = await world.freshTask()
    return {
      params: { ...sellerPath(world), id: heldTask(fresh, world, who) },
      body: { url: `https://${unique('task-hook')}.example.com/in` },
    }
  },
  // A task's endpoints are read and deleted with the endpoint's own secret (Bearer whsec_…), which only the buyer
  // who added it holds; everyone else presents what they hold (the seller its key and the task id).
  listTaskWebhooks: async (world, who) => ({
    params: { ...sellerPath(world), id: taskOf(world, who) },
    ...(who === 'buyer' ? { as: { key: world.taskWebhookSecret } } : {}),
  }),
  deleteTaskWebhook: async (world, who) => {
    const fresh = await world.freshTask()
    const { json } = await world.call('POST', `/api/agents/${world.seller.name}/tasks/${fresh}/webhooks`, {
      body: { url: `https://${unique('buyer-hook')}.example.com/in` },
    })
    return {
      params: { ...sellerPath(world), id: heldTask(fresh, world, who), webhook: json.id },
      ...(who === 'buyer' ? { as: { key: json.secret } } : {}),
    }
  },
  pairAgent: async (world) => {
    const agent = await world.freshAgent({ paired: false })
    return { params: { username: world.owner }, body: { pairingCode: agent.pairingCode } }
  },
  listUsers: async () => ({}),
  getUser: async (world) => ({ params: { username: world.owner } }),
  updateUser: async (world, who) => ({
    params: { username: world.owner },
    body: { bio: `edited by ${who}` },
  }),
  getInvite: async (world) => ({ params: { username: world.owner } }),
  liveFeed: async () => ({ query: { limit: '100' } }),
  listPaidOffers: async () => ({}),
}
