import * as v from 'valibot'
import { a2aCardView } from '../../A2aCard.ts'
import { type AgentRecord, nameKey } from '../../Agent.ts'
import { type AgentCard, buildAgentCard } from '../../AgentCard.ts'
import { type AgentRegistrationFile, buildRegistrationFile } from '../../AgentRegistration.ts'
import { AGENT_SORTS, cheapestPurchasable } from '../../AgentSearch.ts'
import { AgentSyncFields } from '../../AgentSync.ts'
import { type AgentSummary, type AgentView, toAgentSummary } from '../../AgentView.ts'
import { hashSecret } from '../../Credentials.ts'
import { LIVENESS_VALUES, lastSeenRange, livenessChangesAt } from '../../Liveness.ts'
import { amountToNumber, MAX_PRICE_BASE_UNITS, toBaseUnits } from '../../Money.ts'
import type { CardSignature } from '../../ports/CardSigner.ts'
import type { AgentListQuery, AgentStore, StoreLifecycle } from '../../ports/Store.ts'
import { readCache } from '../../ReadCache.ts'
import { Username, usernameKey } from '../../User.ts'
import { noControlCharacters, pageNumber, parseInput, strictFields } from '../../Validation.ts'
import {
  type ActionContext,
  type ActionPorts,
  agentView,
  MILESTONES_SHOWN,
  milestonesOf,
  requireAgent,
} from '../context.ts'
import { syncAgentsAction } from './syncAgents.ts'

/** One page of an agent list, its rows made by the caller. */
export type AgentRowsPage<Row> = { agents: Row[]; total: number; limit: number; offset: number }

/** One page of the agent list. */
export type AgentPage = AgentRowsPage<AgentSummary>

/** A page of the marketplace's agent list: summaries with the cheapest price each sells at (null: none for sale). */
export type BrowsePage = Omit<AgentPage, 'agents'> & {
  agents: (AgentSummary & { cheapestPrice: number | null })[]
}

/** The largest page of any list. */
export const MAX_PAGE_SIZE = 100

/** The `q`, `limit` and `offset` of a list query (the user list takes these alone). */
export const ListInput = strictFields({
  q: v.optional(
    v.pipe(
      v.string('must be a string'),
      noControlCharacters(),
      v.maxLength(100, 'must be at most 100 characters'),
      v.description('A literal, case-insensitive text to find (3 characters or more use the search index).'),
    ),
  ),
  limit: v.optional(pageNumber(1, MAX_PAGE_SIZE), 20),
  offset: v.optional(pageNumber(0, 1_000_000_000), 0),
})

const MaxPrice = v.pipe(
  v.union([v.string(), v.number()], 'must be a USDC amount, e.g. 0.5'),
  // Before the transform, which the OpenAPI conversion stops at.
  v.description('Only agents with a purchasable skill priced at or under this many USDC, e.g. 0.5.'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const base = toBaseUnits(dataset.value)
    if (base !== null && base <= MAX_PRICE_BASE_UNITS) return base
    addIssue({ message: 'must be a USDC amount from 0 to 1000000 with at most 6 decimal places, e.g. 0.5' })
    return NEVER
  }),
)

const words = (values: readonly string[]) => values.map((value) => `"${value}"`).join(', ')

/** Query of GET /api/community/agents: what to find, the filters, the order and the page. */
export const AgentListInput = strictFields({
  ...ListInput.entries,
  ...AgentSyncFields,
  q: v.optional(
    v.pipe(
      v.string('must be a string'),
      noControlCharacters(),
      v.maxLength(100, 'must be at most 100 characters'),
      v.description(
        'A literal, case-insensitive text found in the name, the bio, or the name, slug or description of a skill.',
      ),
    ),
  ),
  type: v.optional(
    v.pipe(
      v.picklist(
        ['free', 'paid'],
        'must be "free" (agents with a free skill) or "paid" (agents with a purchasable skill)',
      ),
      v.description('"free": agents with a free skill; "paid": agents with a purchasable skill.'),
    ),
  ),
  max_price: v.optional(MaxPrice),
  status: v.optional(
    v.pipe(
      v.picklist(LIVENESS_VALUES, `must be one of ${words(LIVENESS_VALUES)}`),
      v.description('Liveness now: live (heartbeat within 5 minutes), idle (within 30), off.'),
    ),
  ),
  owner: v.optional(v.pipe(Username, v.description('Only agents owned by this username (any case).'))),
  sort: v.optional(
    v.pipe(
      v.picklist(AGENT_SORTS, `must be one of ${words(AGENT_SORTS)}`),
      v.description(
        'activity (default: most recently active first), trust (highest trust score first), price (cheapest purchasable skill first, agents selling nothing paid last), new (newest first). Ties: most recently active, then name.',
      ),
    ),
    'activity',
  ),
})

/** The validated query of the agent list. */
type AgentListParams = v.InferOutput<typeof AgentListInput>

/** The store's query for `input` at `now`: the liveness filter becomes a range of last heartbeats. */
function storeQuery(input: AgentListParams, now: Date): AgentListQuery {
  const { q, limit, offset, type, max_price, status, owner, sort } = input
  const filters = {
    q: q || undefined,
    sells: type,
    maxPriceBaseUnits: max_price,
    lastSeen: status ? lastSeenRange(status, now) : undefined,
    owner,
    limit,
    offset,
  }
  return sort === 'trust' ? { ...filters, sort, now } : { ...filters, sort }
}

/** The lowest price among an agent's purchasable skills, in USDC, or null when it sells none. */
function cheapestPrice(agent: AgentRecord): number | null {
  const lowest = cheapestPurchasable(agent.skills)
  return lowest === null ? null : amountToNumber(lowest)
}

/** The public reads of agents (SPEC rows 2-4), memoized by the store's change version and liveness (ADR 0002). */
export function readAgentActions(context: ActionContext<AgentStore & StoreLifecycle>) {
  const { store, config, clock } = context
  const cards = readCache<AgentCard>()
  const views = readCache<AgentView>()
  const pages = readCache<AgentRowsPage<unknown>>()
  // Signing costs milliseconds on a large card: the signed view is kept for as long as the card it was made from
  // (the cards cache hands back the same object until the change version or the agent's liveness moves).
  const signedViews = new WeakMap<AgentCard, Promise<ReturnType<typeof a2aCardView> & SignedFields>>()
  let marketCard: { text: string; signed: Promise<object> } | null = null
  const changeVersion = () => store.changeVersion?.()

  /** One page of the agent list (filtered, in the order asked), each agent made a row by `toRow`. */
  const agentPage = async <Row>(
    kind: string,
    query: unknown,
    toRow: (agent: AgentRecord, now: Date) => Row,
  ): Promise<AgentRowsPage<Row>> => {
    const input = parseInput(AgentListInput, query ?? {}, 'invalid_query')
    const { limit, offset, status, sort } = input
    const now = clock.now()
    const key = JSON.stringify([
      kind,
      input.q ?? '',
      limit,
      offset,
      input.type ?? '',
      input.max_price?.toString() ?? '',
      status ?? '',
      input.owner ? usernameKey(input.owner) : '',
      sort,
    ])
    const page = await pages.read(key, await changeVersion(), now, async () => {
      const found = await store.listAgents(storeQuery(input, now))
      const shown = Math.min(...found.agents.map((agent) => livenessChangesAt(agent.lastSeen, now)))
      // Which agents a liveness filter keeps, and how trust ranks them, change when any agent's liveness does,
      // shown or not: such a page is kept only until the next change of all.
      const dependsOnAll = status !== undefined || sort === 'trust'
      const validUntil = dependsOnAll ? Math.min(shown, await store.nextLivenessChange(now)) : shown
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

  /** The A2A v1.0 card of an agent, kept under the store's change version until its liveness changes. */
  async function agentCard(name: string): Promise<AgentCard> {
    const now = clock.now()
    return cards.read(nameKey(name), await changeVersion(), now, async () => {
      const agent = await requireAgent(context, name)
      const milestones = await milestonesOf(context, agent, MILESTONES_SHOWN)
      return {
        value: buildAgentCard(agent, milestones, now, config),
        validUntil: livenessChangesAt(agent.lastSeen, now),
      }
    })
  }

  return {
    /** Whether `apiKey` is the current key of the agent `name` (one read; a key rotated away is not). */
    async apiKeyWorks(name: string, apiKey: string): Promise<boolean> {
      const owner = await store.findAgentNameByKeyHash(hashSecret(apiKey))
      return owner !== null && nameKey(owner) === nameKey(name)
    },

    /** The public Agent record. */
    async getAgent(name: string): Promise<AgentView> {
      const now = clock.now()
      return views.read(nameKey(name), await changeVersion(), now, async () => {
        const agent = await requireAgent(context, name)
        return { value: await agentView(context, agent), validUntil: livenessChangesAt(agent.lastSeen, now) }
      })
    },

    /** A page of agents, filtered and ordered as the query asks (default: most recently active first). */
    async listAgents(query: unknown): Promise<AgentPage> {
      return agentPage('list', query, (agent, now) => toAgentSummary(agent, now, config.baseUrl))
    },

    /** A page of a sync of the agent list (`cursor` or `updated_since`; syncAgents.ts). */
    syncAgents: syncAgentsAction(context),

    /** The agent list of the marketplace page: each row also carries its cheapest purchasable price. */
    async browseAgents(query: unknown): Promise<BrowsePage> {
      return agentPage('browse', query, (agent, now) => ({
        ...toAgentSummary(agent, now, config.baseUrl),
        cheapestPrice: cheapestPrice(agent),
      }))
    },

    /** The agent's ERC-8004 registration file (`AgentRegistration.ts`), made from its card. */
    async agentRegistration(name: string): Promise<AgentRegistrationFile> {
      return buildRegistrationFile(await agentCard(name), config, { x402: context.x402 !== null })
    },

    /** The A2A v1.0 card of an agent. */
    agentCard,

    /** The agent's card as A2A 1.0 defines it (`a2aCardView`), signed when the marketplace signs cards. */
    async a2aAgentCard(name: string) {
      const card = await agentCard(name)
      let signed = signedViews.get(card)
      if (!signed) {
        signed = signedCard(context, a2aCardView(card))
        signedViews.set(card, signed)
        signed.catch(() => signedViews.delete(card))
      }
      return signed
    },

    /** The marketplace's own A2A card with the marketplace's signatures, signed again only when its text changes. */
    async signA2aCard<Card extends object>(card: Card): Promise<Card & SignedFields> {
      const text = JSON.stringify(card)
      if (marketCard?.text !== text) {
        const signed = signedCard(context, card)
        marketCard = { text, signed }
        signed.catch(() => {
          if (marketCard?.signed === signed) marketCard = null
        })
      }
      return marketCard.signed as Promise<Card & SignedFields>
    },

    /** The public keys the marketplace's card signatures verify with (a JWKS's `keys`; empty when it signs none). */
    async cardKeys(): Promise<Record<string, unknown>[]> {
      return context.cardSigner ? context.cardSigner.publicKeys() : []
    },
  }
}

/** The signatures a signed card carries (A2A's `signatures`). */
type SignedFields = { signatures?: CardSignature[] }

/** `card` with the marketplace's signatures (A2A's `signatures`), or as it is when the marketplace signs nothing. */
async function signedCard<Card extends object>(
  { cardSigner }: ActionPorts,
  card: Card,
): Promise<Card & SignedFields> {
  if (!cardSigner) return card
  return { ...card, signatures: await cardSigner.sign(card) }
}
