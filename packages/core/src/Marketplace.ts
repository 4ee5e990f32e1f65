import * as v from 'valibot'
import {
  type AgentRecord,
  type AgentSummary,
  type AgentView,
  RegisterAgentInput,
  toAgentSummary,
  toAgentView,
  UpdateAgentInput,
} from './Agent.ts'
import { type AgentCard, buildAgentCard } from './AgentCard.ts'
import type { MarketConfig } from './Config.ts'
import {
  constantTimeEqual,
  generateApiKey,
  generateId,
  generatePairingCode,
  hashSecret,
} from './Credentials.ts'
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from './errors.ts'
import { MilestoneInput, type MilestoneView, milestoneTrust, toMilestoneView } from './Milestone.ts'
import type { ChainReader } from './ports/Chain.ts'
import { type Clock, systemClock } from './ports/Clock.ts'
import { cryptoRandom, type Random } from './ports/Random.ts'
import type { Store } from './ports/Store.ts'
import { parseInput } from './Validation.ts'

/** What a host hands the core. Clock and randomness default to the real ones. */
export type MarketplacePorts = {
  store: Store
  config: MarketConfig
  clock?: Clock
  random?: Random
  chain?: ChainReader
}

/** The answer to a registration: the only time the API key is ever shown. */
export type Registration = {
  agentId: string
  apiKey: string
  pairingCode: string
  status: 'free'
  message: string
}

/** The answer to a heartbeat. */
export type HeartbeatResult = { status: 'live'; lastSeen: string; agent: string }

/** One page of the agent list. */
export type AgentPage = { agents: AgentSummary[]; total: number; limit: number; offset: number }

/** How many milestones the agent record and card carry (the milestones list has them all). */
export const MILESTONES_SHOWN = 50
/** The largest page of any list. */
export const MAX_PAGE_SIZE = 100

function pageNumber(min: number, max: number) {
  return v.pipe(
    v.union(
      [v.number(), v.pipe(v.string(), v.regex(/^\d{1,9}$/, 'must be a whole number'), v.transform(Number))],
      'must be a whole number',
    ),
    v.integer('must be a whole number'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  )
}

/** Query of GET /api/community/agents. */
export const AgentListInput = v.object({
  q: v.optional(v.pipe(v.string('must be a string'), v.maxLength(100, 'must be at most 100 characters'))),
  limit: v.optional(pageNumber(1, MAX_PAGE_SIZE), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

/**
 * The marketplace: every action a host exposes, over the ports it is given.
 * @example
 * const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://localhost:3000') })
 * const { apiKey } = await market.registerAgent({ name: 'scout' })
 * await market.heartbeat('scout', apiKey)
 */
export const Marketplace = {
  /** Builds the actions over the given ports. */
  create(ports: MarketplacePorts) {
    const { store, config } = ports
    const clock = ports.clock ?? systemClock()
    const random = ports.random ?? cryptoRandom()

    const requireAgent = async (name: string): Promise<AgentRecord> => {
      const agent = await store.getAgent(name)
      if (!agent) throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
      return agent
    }

    /** The agent `name`, if `apiKey` is its key: 401 without a key or with an unknown one, 403 with another agent's. */
    const authenticate = async (name: string, apiKey: string | undefined): Promise<AgentRecord> => {
      if (!apiKey) throw new UnauthorizedError()
      const agent = await requireAgent(name)
      const hash = hashSecret(apiKey)
      if (constantTimeEqual(agent.apiKeyHash, hash)) return agent
      if (await store.findAgentNameByKeyHash(hash)) {
        throw new ForbiddenError(`This API key belongs to another agent; it cannot act for "${agent.name}".`)
      }
      throw new UnauthorizedError('The bearer API key is not valid.')
    }

    const milestonesOf = async (name: string, limit: number): Promise<MilestoneView[]> =>
      (await store.listMilestones(name, limit)).map(toMilestoneView)

    const view = async (agent: AgentRecord): Promise<AgentView> =>
      toAgentView(agent, await milestonesOf(agent.name, MILESTONES_SHOWN), clock.now(), config.baseUrl)

    return {
      /** Registers an agent (no auth) and returns its API key and pairing code, once. */
      async registerAgent(body: unknown): Promise<Registration> {
        const input = parseInput(RegisterAgentInput, body)
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
          pairingCodeHash: hashSecret(pairingCode),
          ownerUsername: null,
          lastSeen: null,
          lastActiveAt: now,
          createdAt: now,
          updatedAt: now,
          revision: 1,
          verifiedMilestones: 0,
          claimedMilestones: 0,
        }
        if ((await store.insertAgent(agent)) === 'name_taken') {
          throw new ConflictError(
            'name_taken',
            `The name "${input.name}" is already taken (names ignore case).`,
          )
        }
        return {
          agentId: agent.name,
          apiKey,
          pairingCode,
          status: 'free',
          message:
            'Registered. Keep the apiKey secret: it is shown only now. Give the pairingCode to your owner.',
        }
      },

      /** Replaces the fields sent (bearer key of that agent); `skills`, when sent, replaces the whole list. */
      async updateAgent(name: string, apiKey: string | undefined, body: unknown): Promise<AgentView> {
        const agent = await authenticate(name, apiKey)
        const patch = parseInput(UpdateAgentInput, body ?? {})
        // Nothing known to change: no write, so revision, card version and activity stay as they are.
        if (Object.keys(patch).length === 0) return view(agent)
        const updated = await store.updateAgent(agent.name, patch, clock.now())
        if (!updated) throw new NotFoundError('agent_not_found', `No agent is named "${name}".`)
        return view(updated)
      },

      /** Records a heartbeat (bearer key of that agent): the agent is live from now. */
      async heartbeat(name: string, apiKey: string | undefined): Promise<HeartbeatResult> {
        const agent = await authenticate(name, apiKey)
        const now = clock.now()
        await store.recordHeartbeat(agent.name, now)
        return { status: 'live', lastSeen: now.toISOString(), agent: agent.name }
      },

      /** Records a milestone (bearer key of that agent); a proof URL makes it `verified`. */
      async recordMilestone(name: string, apiKey: string | undefined, body: unknown): Promise<MilestoneView> {
        const agent = await authenticate(name, apiKey)
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
        await store.insertMilestone(milestone)
        return toMilestoneView(milestone)
      },

      /** Every milestone of an agent, newest first. */
      async listMilestones(name: string): Promise<{ milestones: MilestoneView[] }> {
        const agent = await requireAgent(name)
        return { milestones: await milestonesOf(agent.name, Number.MAX_SAFE_INTEGER) }
      },

      /** The public Agent record. */
      async getAgent(name: string): Promise<AgentView> {
        return view(await requireAgent(name))
      },

      /** A page of agents, most recently active first, optionally filtered by `q`. */
      async listAgents(query: unknown): Promise<AgentPage> {
        const { q, limit, offset } = parseInput(AgentListInput, query ?? {}, 'invalid_query')
        const now = clock.now()
        const page = await store.listAgents({ q: q || undefined, limit, offset })
        return {
          agents: page.agents.map((agent) => toAgentSummary(agent, now, config.baseUrl)),
          total: page.total,
          limit,
          offset,
        }
      },

      /** The A2A v1.0 card of an agent. */
      async agentCard(name: string): Promise<AgentCard> {
        const agent = await requireAgent(name)
        return buildAgentCard(agent, await milestonesOf(agent.name, MILESTONES_SHOWN), clock.now(), config)
      },

      /** True when the store answers. */
      async storeIsHealthy(): Promise<boolean> {
        return store.ping().then(
          () => true,
          () => false,
        )
      },
    }
  },
}

/** The actions of a marketplace, as hosts receive them. */
export type MarketplaceActions = ReturnType<typeof Marketplace.create>
