import { type AgentRecord, nameKey } from '../Agent.ts'
import { type AgentView, toAgentView } from '../AgentView.ts'
import type { MarketConfig } from '../Config.ts'
import { constantTimeEqual, hashSecret } from '../Credentials.ts'
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../errors.ts'
import type { FeedHub } from '../FeedHub.ts'
import { type MilestoneView, toMilestoneView } from '../Milestone.ts'
import type { PairingDigests } from '../PairingCode.ts'
import type { MppCharger } from '../payments/Mpp.ts'
import type { X402Settings } from '../payments/X402.ts'
import type { CardSigner } from '../ports/CardSigner.ts'
import type { ChainReader } from '../ports/Chain.ts'
import type { Clock } from '../ports/Clock.ts'
import type { Random } from '../ports/Random.ts'
import type { AgentStore, Store } from '../ports/Store.ts'
import type { readCache } from '../ReadCache.ts'

/** What every action works with but the store. */
export type ActionPorts = {
  config: MarketConfig
  clock: Clock
  random: Random
  feed: FeedHub
  /** The payment chain; null when the host has none (payments then answer 503). */
  chain: ChainReader | null
  /** Machine payments (MPP); null when the host takes none (per-skill orders then answer 503). */
  mpp: MppCharger | null
  /** x402 payments on the payment chain; null when the host takes none. */
  x402: X402Settings | null
  /** Signs the A2A cards served; null: unsigned. */
  cardSigner: CardSigner | null
  /**
   * Each agent's name as registered and the API key hash last seen, by name key, so a hot path such as the heartbeat
   * authenticates without a store read. A key may be rotated by another process, so the hash here only ever lets a
   * request through to a write that checks it again (`recordHeartbeat` with the hash); any other key is looked up.
   */
  credentials: Map<string, { name: string; apiKeyHash: string }>
  /** Each agent's newest milestones as last read, by name key (see `milestonesOf`). */
  newestMilestones: ReturnType<typeof readCache<MilestoneView[]>>
  /** Digests of pairing codes under the marketplace's pairing secret. */
  pairing: PairingDigests
}

/**
 * What an action works with: the ports and the slices `S` of the store it uses (ports/Store.ts), named in its
 * signature, e.g. `ActionContext<AgentStore & TaskStore>`; the marketplace passes the whole store.
 * `tests/core-slices.test.ts` checks that each action names only slices whose methods it calls.
 */
export type ActionContext<S extends Partial<Store>> = ActionPorts & { store: S }

/** 404 agent_not_found for `name`, as asked. */
export const agentNotFound = (name: string) =>
  new NotFoundError('agent_not_found', `No agent is named "${name}".`)

/** The agent of that name, or a 404. */
export async function requireAgent({ store }: ActionContext<AgentStore>, name: string): Promise<AgentRecord> {
  const agent = await store.getAgent(name)
  if (!agent) throw agentNotFound(name)
  return agent
}

/** Throws 401, or 403 when `hash` is another agent's key; `name` is the agent the key was presented for. */
async function refuseKey(context: ActionContext<AgentStore>, name: string, hash: string): Promise<never> {
  if (await context.store.findAgentNameByKeyHash(hash)) {
    throw new ForbiddenError(`This API key belongs to another agent; it cannot act for "${name}".`)
  }
  throw new UnauthorizedError('The bearer API key is not valid.')
}

/** The agent `name`, if `apiKey` is its key: 401 without a key or with an unknown one, 403 with another agent's. */
export async function authenticate(
  context: ActionContext<AgentStore>,
  name: string,
  apiKey: string | undefined,
): Promise<AgentRecord> {
  if (!apiKey) throw new UnauthorizedError()
  return authenticateHash(context, name, hashSecret(apiKey))
}

/** As `authenticate`, given the key's hash (hashed once by the caller). */
async function authenticateHash(
  context: ActionContext<AgentStore>,
  name: string,
  hash: string,
): Promise<AgentRecord> {
  const agent = await requireAgent(context, name)
  context.credentials.set(nameKey(agent.name), { name: agent.name, apiKeyHash: agent.apiKeyHash })
  return constantTimeEqual(agent.apiKeyHash, hash) ? agent : refuseKey(context, agent.name, hash)
}

/** Who sends a keyed write: the agent's name as registered and the hash of the key it was sent with. */
export type KeySender = { name: string; apiKeyHash: string }

/**
 * As `authenticate`, answering the agent's name and the key's hash: from memory when the key is the one last seen,
 * without a store read. The key is hashed here, once per write: `keyedWrite` and the store reuse the hash. The caller's
 * write must check the hash again (the key may have been rotated elsewhere): `keyedWrite` does.
 */
export async function authenticateName(
  context: ActionContext<AgentStore>,
  name: string,
  apiKey: string | undefined,
): Promise<KeySender> {
  if (!apiKey) throw new UnauthorizedError()
  const known = context.credentials.get(nameKey(name))
  const hash = hashSecret(apiKey)
  if (known && constantTimeEqual(known.apiKeyHash, hash)) return known
  // Unknown here, a wrong key, or a key rotated by another process: the store decides.
  const agent = await authenticateHash(context, name, hash)
  return { name: agent.name, apiKeyHash: hash }
}

/**
 * Lands a write of `sender` (from `authenticateName`) that checks the key's hash in its own statement and answers
 * false or null when the store refused it. Refused when the key remembered here was rotated meanwhile by another
 * process: the store's own answer then decides (401, 403, 404), with the same hash, and the write is tried once more;
 * only a rotation landing between the two can refuse it again, so that is a 401.
 */
export async function keyedWrite<T>(
  context: ActionContext<AgentStore>,
  sender: KeySender,
  write: (sender: KeySender) => Promise<T | null | false>,
): Promise<{ sender: KeySender; written: T }> {
  const first = await write(sender)
  if (first !== null && first !== false) return { sender, written: first }
  const agent = await authenticateHash(context, sender.name, sender.apiKeyHash)
  const checked = { name: agent.name, apiKeyHash: sender.apiKeyHash }
  const again = await write(checked)
  if (again === null || again === false) throw new UnauthorizedError()
  return { sender: checked, written: again }
}

/** How many milestones the agent record and card carry (the milestones list has them all). */
export const MILESTONES_SHOWN = 50

/** How many agents' newest milestones `milestonesOf` remembers; the oldest goes first past it. */
export const MILESTONE_MEMO_SIZE = 1000

/**
 * An agent's newest milestones on the wire, read again only when the agent's milestone counts have changed. Milestones
 * are only ever added, each counted on its agent in the same write (`Store.insertMilestone`), so the same agent (name
 * and creation time) with the same counts has the same newest milestones, whichever process added them. An agent's
 * update (a PUT answers the whole record) then costs no milestone read (50 rows: about half of a PUT; bench/CHANGES.md).
 */
export async function milestonesOf(
  { store, clock, newestMilestones }: ActionContext<AgentStore>,
  agent: AgentRecord,
  limit: number,
): Promise<MilestoneView[]> {
  // The counts stand in for the store's change version: they move with every milestone and with nothing else.
  const stamp = `${agent.createdAt.getTime()}:${agent.verifiedMilestones}:${agent.claimedMilestones}:${limit}`
  return newestMilestones.read(nameKey(agent.name), stamp, clock.now(), async () => ({
    value: (await store.listMilestones(agent.name, limit)).map(toMilestoneView),
    validUntil: Number.POSITIVE_INFINITY,
  }))
}

/** The public Agent record of a stored agent, with its newest milestones. */
export async function agentView(context: ActionContext<AgentStore>, agent: AgentRecord): Promise<AgentView> {
  const milestones = await milestonesOf(context, agent, MILESTONES_SHOWN)
  return toAgentView(agent, milestones, context.clock.now(), context.config.baseUrl)
}
