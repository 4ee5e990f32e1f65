import type { Principal } from './world.ts'

// What each principal may do with each operation, one cell each, written out: the access matrix. Rows are the route
// table's operationIds (packages/core/src/routes/marketRoutes.ts and the server's own in routes/discovery.ts); the
// test fails when a row has no cell for a principal, or a cell names an operation the table no longer has.
//
// The principals (tests/security/access/world.ts): `anonymous` holds nothing; `seller` the key of the agent asked
// about (and its orders' ids); `otherSeller` another agent's key and its own order's id; `buyer` the id of its order
// with the seller and the wallet it named; `otherBuyer` the id of its order with the other seller; `ownerWallet` an
// EIP-712 proof by the wallet owning the seller; `ownerLegacyProof` the same wallet's deprecated EIP-191 proof;
// `strangerWallet` an EIP-712 proof by a wallet owning nothing. Every principal signs what a body asks it to sign
// with its own wallet.

/** Allowed with this status, or refused with this status and (when stated) problem code. */
export type Outcome = { allowed: true; status: number } | { allowed: false; status: number; code?: string }

/** One cell: the same outcome on every interface, or one for HTTP hosts and another for MCP tools. */
export type Cell = Outcome | { http: Outcome; mcp: Outcome }

const ok = (status = 200): Outcome => ({ allowed: true, status })
const no = (status: number, code?: string): Outcome => ({
  allowed: false,
  status,
  ...(code ? { code } : {}),
})

const OK = ok()
const CREATED = ok(201)
const UNAUTHORIZED = no(401, 'unauthorized')
const FORBIDDEN = no(403, 'forbidden')
const NO_TASK = no(404, 'task_not_found')
const NO_PROOF = no(401, 'wallet_proof_required')
const BAD_SIG = no(401, 'invalid_signature')
/** The deprecated EIP-191 proof on an operation CONTRACT.md does not name it for (issue 37, mechanism 4). */
const LEGACY_NO = no(400, 'eip712_proof_required')
/** No MPP or x402 credential: the 402 challenge, no task. */
const PAY = no(402, 'payment_required')
/** The payment chain is not reachable in this world: the task's holders get as far as asking it. */
const NO_CHAIN = no(503, 'chain_unavailable')
/** A pairing without X-Wallet-Address is malformed before anyone is asked. */
const NO_ADDR = no(400, 'invalid_wallet_address')
/** The world's orders are free, never paid on chain: nothing to refund or rate. */
const NO_REFUND = no(409, 'refund_not_verifiable')
const NO_RATE = no(409, 'not_ratable')
/** Over MCP a tool call carries no wallet proof: only the key reads the budget. */
const viaKey = (http: Outcome): Cell => ({ http, mcp: UNAUTHORIZED })

/** A row of the table: one cell per principal, in the order of PRINCIPALS. */
const cells = (...row: [Cell, Cell, Cell, Cell, Cell, Cell, Cell, Cell]): Record<Principal, Cell> => {
  const [anonymous, seller, otherSeller, buyer, otherBuyer, ownerWallet, ownerLegacyProof, strangerWallet] =
    row
  return { anonymous, seller, otherSeller, buyer, otherBuyer, ownerWallet, ownerLegacyProof, strangerWallet }
}

/**
 * ACCESS[operationId][principal]: the outcome of that principal's request, every cell written out. Notes: listTasks
 * answers the public history (completed tasks, never an id) to those without the seller's key, and refuses another
 * agent's key rather than read it as the public; the seller signs reviews with its own wallet (refused); a stranger
 * holding a pairing code cannot claim an agent into the owner's account; the seller may add an endpoint to its own
 * order (it learns nothing its own webhooks do not tell it) but neither reads nor deletes the buyer's (finding 6);
 * setBudget's credential is the body's EIP-712 SpendingBudget signature, whatever the request's proof.
 */
// biome-ignore format: a table, one column per principal
export const ACCESS: Record<string, Record<Principal, Cell>> = {
  //                         anonymous     seller        otherSeller  buyer         otherBuyer    ownerWallet        ownerLegacyProof   strangerWallet
  apiIndex:             cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  health:               cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  live:                 cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  ready:                cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  listAgents:           cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  getAgent:             cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  getAgentCard:         cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  getAgentRegistration: cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  getAgentA2aCard:      cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  registerAgent:        cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  updateAgent:          cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  heartbeat:            cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  issuePairingCode:     cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  rotateApiKey:         cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, OK,                LEGACY_NO,         FORBIDDEN),
  recordMilestone:      cells(UNAUTHORIZED, CREATED,      FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  listMilestones:       cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  createTask:           cells(CREATED,      CREATED,      CREATED,     CREATED,      CREATED,      CREATED,           CREATED,           CREATED),
  listTasks:            cells(OK,           OK,           FORBIDDEN,   OK,           OK,           OK,                OK,                OK),
  orderWithPayment:     cells(PAY,          PAY,          PAY,         PAY,          PAY,          PAY,               PAY,               PAY),
  getTask:              cells(NO_TASK,      OK,           NO_TASK,     OK,           NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  verifyPayment:        cells(NO_TASK,      NO_CHAIN,     NO_TASK,     NO_CHAIN,     NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  completeTask:         cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  acceptDelivery:       cells(NO_TASK,      BAD_SIG,      NO_TASK,     OK,           NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  rejectDelivery:       cells(NO_TASK,      BAD_SIG,      NO_TASK,     OK,           NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  recordRefund:         cells(UNAUTHORIZED, NO_REFUND,    FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  rateTask:             cells(NO_TASK,      NO_RATE,      NO_TASK,     NO_RATE,      NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  listRatings:          cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  withdrawListing:      cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  setBudget:            cells(BAD_SIG,      BAD_SIG,      BAD_SIG,     BAD_SIG,      BAD_SIG,      OK,                OK,                BAD_SIG),
  getBudget:            cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, viaKey(OK),        viaKey(LEGACY_NO), viaKey(FORBIDDEN)),
  addWebhook:           cells(UNAUTHORIZED, CREATED,      FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  listWebhooks:         cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  deleteWebhook:        cells(UNAUTHORIZED, OK,           FORBIDDEN,   UNAUTHORIZED, UNAUTHORIZED, UNAUTHORIZED,      UNAUTHORIZED,      UNAUTHORIZED),
  addTaskWebhook:       cells(NO_TASK,      CREATED,      NO_TASK,     CREATED,      NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  listTaskWebhooks:     cells(NO_TASK,      UNAUTHORIZED, NO_TASK,     OK,           NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  deleteTaskWebhook:    cells(NO_TASK,      UNAUTHORIZED, NO_TASK,     OK,           NO_TASK,      NO_TASK,           NO_TASK,           NO_TASK),
  pairAgent:            cells(NO_ADDR,      NO_ADDR,      NO_ADDR,     NO_ADDR,      NO_ADDR,      OK,                LEGACY_NO,         FORBIDDEN),
  listUsers:            cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  getUser:              cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  updateUser:           cells(NO_PROOF,     NO_PROOF,     NO_PROOF,    NO_PROOF,     NO_PROOF,     OK,                OK,                FORBIDDEN),
  getInvite:            cells(NO_PROOF,     NO_PROOF,     NO_PROOF,    NO_PROOF,     NO_PROOF,     OK,                OK,                FORBIDDEN),
  liveFeed:             cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
  listPaidOffers:       cells(OK,           OK,           OK,          OK,           OK,           OK,                OK,                OK),
}

/** A cell whose outcome is the correct one but waits on another branch's fix (issue 37); run as test.todo. */
export type PendingCell = {
  operation: string
  principal: Principal
  why: string
  /** Only on interfaces of this kind (default: every interface). */
  kind?: 'http' | 'mcp'
}

/**
 * Cells that fail on this branch because the fix is another helper's: each runs as `test.todo` (see it with
 * `bun test --todo`); delete its line once the fix is merged and the cell passes.
 */
export const PENDING: readonly PendingCell[] = []

/** The outcome a cell expects on an interface of this kind. */
export function outcomeOf(cell: Cell, kind: 'http' | 'mcp'): Outcome {
  return 'http' in cell ? cell[kind] : cell
}
