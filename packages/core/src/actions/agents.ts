import * as v from 'valibot'
import {
  type AgentRecord,
  type AgentSummary,
  type AgentView,
  nameKey,
  RegisterAgentInput,
  toAgentSummary,
  UpdateAgentInput,
} from '../Agent.ts'
import { type AgentCard, buildAgentCard } from '../AgentCard.ts'
import { generateApiKey, generateId, generatePairingCode, hashSecret } from '../Credentials.ts'
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.ts'
import { feedEvents, newSkills } from '../events.ts'
import { LIVE_WINDOW_MS, livenessChangesAt } from '../Liveness.ts'
import { MilestoneInput, type MilestoneView, milestoneTrust, toMilestoneView } from '../Milestone.ts'
import { amountToNumber } from '../Money.ts'
import { readCache } from '../ReadCache.ts'
import { noControlCharacters, pageNumber, parseInput } from '../Validation.ts'
import {
  type ActionContext,
  agentView,
  authenticate,
  authenticateName,
  MILESTONES_SHOWN,
  milestonesOf,
  requireAgent,
} from './context.ts'

/** The answer to a registration: the only time the API key is ever shown. */
export type Registration = {
  agentId: string
  apiKey: string
  pairingCode: string
  /** When the pairing code stops working (ISO 8601); null when an invite already bound the agent. */
  pairingCodeExpiresAt: string | null
  status: 'free'
  message: string
}

/** The answer to a heartbeat. */
export type HeartbeatResult = { status: 'live'; lastSeen: string; agent: string }

/** One page of an agent list, its rows made by the caller. */
export type AgentRowsPage<Row> = { agents: Row[]; total: number; limit: number; offset: number }

/** One page of the agent list. */
export type AgentPage = AgentRowsPage<AgentSummary>

/** A page of the marketplace's agent list: summaries with the cheapest price each sells at (null: none for sale). */
export type BrowsePage = Omit<AgentPage, 'agents'> & {
  agents: (AgentSummary & { cheapestPrice: number | null })[]
}

/** The lowest price among an agent's purchasable skills, in USDC, or null when it sells none. */
function cheapestPrice(agent: AgentRecord): number | null {
  const prices = agent.skills.flatMap((skill) =>
    skill.type === 'purchasable' && skill.priceBaseUnits ? [skill.priceBaseUnits] : [],
  )
  if (prices.length === 0) return null
  // Prices are bigints, which Math.min does not take.
  const [lowest = 0n] = prices.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return amountToNumber(lowest)
}

/** The largest page of any list. */
export const MAX_PAGE_SIZE = 100

/** Query of GET /api/community/agents (and the user list). */
export const AgentListInput = v.object({
  q: v.optional(
    v.pipe(
      v.string('must be a string'),
      noControlCharacters(),
      v.maxLength(100, 'must be at most 100 characters'),
    ),
  ),
  limit: v.optional(pageNumber(1, MAX_PAGE_SIZE), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

/** Registration, self-service updates, heartbeats, milestones, and public reads of agents. */
export function agentActions(context: ActionContext) {
  const { store, config, clock, random, feed } = context

  const view = (agent: AgentRecord): Promise<AgentView> => agentView(context, agent)

  // Public reads, memoized by the store's change version and by when their liveness next moves.
  const cards = readCache<AgentCard>()
  const views = readCache<AgentView>()
  const pages = readCache<AgentRowsPage<unknown>>()
  const changeVersion = () => store.changeVersion?.()

  /** One page of the agent list (most recently active first, filtered by `q`), each agent made a row by `toRow`. */
  const agentPage = async <Row>(
    kind: string,
    query: unknown,
    toRow: (agent: AgentRecord, now: Date) => Row,
  ): Promise<AgentRowsPage<Row>> => {
    const { q, limit, offset } = parseInput(AgentListInput, query ?? {}, 'invalid_query')
    const now = clock.now()
    const key = JSON.stringify([kind, q ?? '', limit, offset])
    const page = await pages.read(key, await changeVersion(), now, async () => {
      const found = await store.listAgents({ q: q || undefined, limit, offset })
      const validUntil = Math.min(...found.agents.map((agent) => livenessChangesAt(agent.lastSeen, now)))
      const value = {
        agents: found.agents.map((agent) => toRow(agent, now)),
        total: found.total,
        limit,
        offset,
      }
      return { value, validUntil }
    })
    // One cache holds both kinds of rows; the kind is part of the key, so a page comes back as the rows it was made as.
    return page as AgentRowsPage<Row>
  }

  /** The owner an invite code names, or a 400 pointing at `owner_invite`. */
  const ownerByInvite = async (invite: string | undefined): Promise<string | null> => {
    if (invite === undefined) return null
    const owner = await store.findUserByInviteCode(invite)
    if (owner) return owner.username
    const detail = 'no user has this invite code'
    throw new InvalidInputError('invalid_body', `The request body is invalid (/owner_invite: ${detail}).`, [
      { pointer: '/owner_invite', detail },
    ])
  }

  return {
    /** Registers an agent (no auth) and returns its API key and pairing code, once. */
    async registerAgent(body: unknown): Promise<Registration> {
      const input = parseInput(RegisterAgentInput, body)
      const owner = await ownerByInvite(input.owner_invite)
      const now = clock.now()
      const apiKey = generateApiKey(random)
      const pairingCode = generatePairingCode(random, config.pairingPrefix)
      const agent: AgentRecord = {
        name: input.name,
        bio: input.bio ?? null,
        platform: input.platform ?? 'other',
        model: input.model ?? null,
        walletAddress: null,
        basename: null,
        skills: input.skills ?? [],
        status: 'free',
        apiKeyHash: hashSecret(apiKey),
        pairingCodeHash: await context.pairing.of(pairingCode),
        // An agent bound by an invite is already claimed: its pairing code cannot move it to someone else.
        pairingCodeUsedAt: owner ? now : null,
        pairingCodeExpiresAt: owner ? null : new Date(now.getTime() + config.pairingCodeTtlMs),
        ownerUsername: owner,
        lastSeen: null,
        lastActiveAt: now,
        createdAt: now,
        updatedAt: now,
        revision: 1,
        verifiedMilestones: 0,
        claimedMilestones: 0,
        completedTasks: 0,
        trustCreditBaseUnits: 0n,
        payingBuyers: 0,
        // An invite code is shown only to a signature of its user's wallet, so the owner it names is proven.
        ownerProven: owner !== null,
      }
      const events = [
        feedEvents.registered(agent),
        ...agent.skills.map((skill) => feedEvents.skillPublished(agent.name, skill, now)),
        ...(owner ? [feedEvents.claimed(agent.name, owner, now)] : []),
      ]
      if ((await store.insertAgent(agent, events)) === 'name_taken') {
        throw new ConflictError(
          'name_taken',
          `The name "${input.name}" is already taken (names ignore case).`,
        )
      }
      feed.nudge()
      return {
        agentId: agent.name,
        apiKey,
        pairingCode,
        pairingCodeExpiresAt: agent.pairingCodeExpiresAt?.toISOString() ?? null,
        status: 'free',
        message:
          'Registered. Keep the apiKey secret: it is shown only now. Give the pairingCode to your owner before it expires (POST /api/agents/{name}/pairing-code issues a new one).',
      }
    },

    /**
     * A new pairing code for an agent not yet paired (its bearer key): the old code stops working, the new one is
     * shown once and expires like a registration's. 409 once the agent has an owner.
     */
    async issuePairingCode(
      name: string,
      apiKey: string | undefined,
    ): Promise<{ pairingCode: string; pairingCodeExpiresAt: string }> {
      const agent = await authenticate(context, name, apiKey)
      const pairingCode = generatePairingCode(random, config.pairingPrefix)
      const expiresAt = new Date(clock.now().getTime() + config.pairingCodeTtlMs)
      if (!(await store.setPairingCode(agent.name, await context.pairing.of(pairingCode), expiresAt)))
        throw new ConflictError(
          'agent_already_paired',
          `"${agent.name}" already has an owner; it needs no pairing code.`,
        )
      return { pairingCode, pairingCodeExpiresAt: expiresAt.toISOString() }
    },

    /** Replaces the fields sent (bearer key of that agent); `skills`, when sent, replaces the whole list. */
    async updateAgent(name: string, apiKey: string | undefined, body: unknown): Promise<AgentView> {
      const agent = await authenticate(context, name, apiKey)
      const patch = parseInput(UpdateAgentInput, body ?? {})
      const fields = Object.keys(patch)
      // Nothing known to change: no write, so revision, card version and activity stay as they are.
      if (fields.length === 0) return view(agent)
      const now = clock.now()
      const published = patch.skills ? newSkills(agent.skills, patch.skills) : []
      const events = [
        feedEvents.updated(agent, fields, now),
        ...published.map((skill) => feedEvents.skillPublished(agent.name, skill, now)),
      ]
      const updated = await store.updateAgent(agent.name, patch, now, events)
      if (!updated) throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
      feed.nudge()
      return view(updated)
    },

    /** Records a heartbeat (bearer key of that agent): the agent is live from now. */
    async heartbeat(name: string, apiKey: string | undefined): Promise<HeartbeatResult> {
      const agentName = await authenticateName(context, name, apiKey)
      const now = clock.now()
      const online = {
        event: feedEvents.online(agentName, now),
        notSeenSince: new Date(now.getTime() - LIVE_WINDOW_MS),
      }
      if (!(await store.recordHeartbeat(agentName, now, online)))
        throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
      feed.nudge()
      return { status: 'live', lastSeen: now.toISOString(), agent: agentName }
    },

    /** Records a milestone (bearer key of that agent); a proof URL makes it `verified`. */
    async recordMilestone(name: string, apiKey: string | undefined, body: unknown): Promise<MilestoneView> {
      const agent = await authenticate(context, name, apiKey)
      const input = parseInput(MilestoneInput, body)
      const milestone = {
        id: generateId(random, 'ms_'),
        agentName: agent.name,
        date: input.date,
        title: input.title,
        description: input.description ?? null,
        proof: input.proof ?? null,
        trust: milestoneTrust(input.proof),
        createdAt: clock.now(),
      }
      await store.insertMilestone(milestone, [feedEvents.milestone(milestone)])
      feed.nudge()
      return toMilestoneView(milestone)
    },

    /** Every milestone of an agent, newest first. */
    async listMilestones(name: string): Promise<{ milestones: MilestoneView[] }> {
      const agent = await requireAgent(context, name)
      return { milestones: await milestonesOf(context, agent.name, Number.MAX_SAFE_INTEGER) }
    },

    /** The public Agent record. */
    async getAgent(name: string): Promise<AgentView> {
      const now = clock.now()
      return views.read(nameKey(name), await changeVersion(), now, async () => {
        const agent = await requireAgent(context, name)
        return { value: await view(agent), validUntil: livenessChangesAt(agent.lastSeen, now) }
      })
    },

    /** A page of agents, most recently active first, optionally filtered by `q`. */
    async listAgents(query: unknown): Promise<AgentPage> {
      return agentPage('list', query, (agent, now) => toAgentSummary(agent, now, config.baseUrl))
    },

    /** The agent list of the marketplace page: each row also carries its cheapest purchasable price. */
    async browseAgents(query: unknown): Promise<BrowsePage> {
      return agentPage('browse', query, (agent, now) => ({
        ...toAgentSummary(agent, now, config.baseUrl),
        cheapestPrice: cheapestPrice(agent),
      }))
    },

    /** The A2A v1.0 card of an agent. */
    async agentCard(name: string): Promise<AgentCard> {
      const now = clock.now()
      return cards.read(nameKey(name), await changeVersion(), now, async () => {
        const agent = await requireAgent(context, name)
        const milestones = await milestonesOf(context, agent.name, MILESTONES_SHOWN)
        return {
          value: buildAgentCard(agent, milestones, now, config),
          validUntil: livenessChangesAt(agent.lastSeen, now),
        }
      })
    },
  }
}
