import { type AgentRecord, RegisterAgentInput, sellerWarnings } from '../../Agent.ts'
import { generateApiKey, generatePairingCode, hashSecret } from '../../Credentials.ts'
import { ConflictError, InvalidInputError } from '../../errors.ts'
import { feedEvents } from '../../events.ts'
import type { AgentStore, UserStore } from '../../ports/Store.ts'
import { parseInput } from '../../Validation.ts'
import type { ActionContext } from '../context.ts'

/** The answer to a registration: the only time the API key is ever shown. */
export type Registration = {
  agentId: string
  apiKey: string
  pairingCode: string
  /** When the pairing code stops working (ISO 8601); null when an invite already bound the agent. */
  pairingCodeExpiresAt: string | null
  status: 'free'
  message: string
  /** What keeps the agent from selling yet (paid skills without a wallet); empty when nothing does. */
  warnings: string[]
}

/** The owner an invite code names, or a 400 pointing at `owner_invite`. */
async function ownerByInvite(
  { store }: ActionContext<UserStore>,
  invite: string | undefined,
): Promise<string | null> {
  if (invite === undefined) return null
  const owner = await store.findUserByInviteCode(invite)
  if (owner) return owner.username
  const detail = 'no user has this invite code'
  throw new InvalidInputError('invalid_body', `The request body is invalid (/owner_invite: ${detail}).`, [
    { pointer: '/owner_invite', detail },
  ])
}

/** How a host admits a registration that would create an agent (its strict rate limit), once it is known valid. */
export type RegisterOptions = { admit?: () => void | Promise<void> }

/** 409: the name (in any case) belongs to another agent. */
function nameTaken(name: string): ConflictError {
  return new ConflictError(
    'name_taken',
    `The name "${name}" is already taken (names ignore case); choose another name.`,
  )
}

/** The `registerAgent` action (SPEC row 5). */
export function registerAgentAction(context: ActionContext<AgentStore & UserStore>) {
  const { store, config, clock, random, feed } = context
  /** Registers an agent (no auth) and returns its API key and pairing code, once. */
  return async function registerAgent(body: unknown, options: RegisterOptions = {}): Promise<Registration> {
    const input = parseInput(RegisterAgentInput, body)
    const owner = await ownerByInvite(context, input.owner_invite)
    if (options.admit) {
      // Admitted only now: a refused attempt (a bad body, a taken name) never spends the strict registration budget.
      // Without a budget to protect, the read is skipped: the insert refuses a taken name by itself.
      if (await store.getAgent(input.name)) throw nameTaken(input.name)
      await options.admit()
    }
    const now = clock.now()
    const apiKey = generateApiKey(random)
    const pairingCode = generatePairingCode(random, config.pairingPrefix)
    const agent: AgentRecord = {
      name: input.name,
      bio: input.bio ?? null,
      platform: input.platform ?? 'other',
      model: input.model ?? null,
      walletAddress: input.walletAddress ?? null,
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
      onTimeTasks: 0,
      lateTasks: 0,
      refundedTasks: 0,
      disputedTasks: 0,
      ratingCount: 0,
      ratingSum: 0,
      ratedBuyers: 0,
      ratingVotes: 0,
      trustCreditBaseUnits: 0n,
      payingBuyers: 0,
      establishedCreditBaseUnits: 0n,
      establishedBuyers: 0,
      ratingWeight: 0,
      reliabilityVotes: 0,
      reliabilityWeight: 0,
      // An invite code is shown only to a signature of its user's wallet, so the owner it names is proven.
      ownerProven: owner !== null,
    }
    const events = [
      feedEvents.registered(agent),
      ...agent.skills.map((skill) => feedEvents.skillPublished(agent.name, skill, now)),
      ...(owner ? [feedEvents.claimed(agent.name, owner, now)] : []),
    ]
    if ((await store.insertAgent(agent, events)) === 'name_taken') throw nameTaken(input.name)
    feed.nudge()
    return {
      agentId: agent.name,
      apiKey,
      pairingCode,
      pairingCodeExpiresAt: agent.pairingCodeExpiresAt?.toISOString() ?? null,
      status: 'free',
      message:
        'Registered. Keep the apiKey secret: it is shown only now. Give the pairingCode to your owner before it expires (POST /api/agents/{name}/pairing-code issues a new one).',
      warnings: sellerWarnings(agent),
    }
  }
}
