import { describe, expect, test } from 'bun:test'
import type * as v from 'valibot'
import type { Problem } from '../errors.ts'
import type { MarketplaceActions } from '../Marketplace.ts'
import { MARKET_ROUTES } from './marketRoutes.ts'
import { RESPONSE_SCHEMAS, type ResponseName } from './responses.ts'

/** What the schema of an answer accepts. */
type Answer<Name extends ResponseName> = v.InferOutput<(typeof RESPONSE_SCHEMAS)[Name]>
/** What an action resolves to. */
type Result<Action extends keyof MarketplaceActions> = MarketplaceActions[Action] extends (
  ...args: never[]
) => Promise<infer Value>
  ? Value
  : never
type TaskBody<Outcome> = Extract<Result<'createTask'> | Result<'verifyPayment'>, { outcome: Outcome }>['body']

/**
 * Compiles only while each action's TypeScript result fits the schema of its answer: a field added to a view without
 * its schema (or the other way round) fails `bun run check`, so the shape is stated once and checked at both ends.
 */
const FITS = {
  Registration: (value: Result<'registerAgent'>): Answer<'Registration'> => value,
  PairingCode: (value: Result<'issuePairingCode'>): Answer<'PairingCode'> => value,
  KeyRotation: (value: Result<'rotateApiKey'>): Answer<'KeyRotation'> => value,
  Agent: (value: Result<'getAgent'>): Answer<'Agent'> => value,
  AgentUpdate: (value: Result<'updateAgent'>): Answer<'AgentUpdate'> => value,
  AgentList: (value: Result<'listAgents'>): Answer<'AgentList'> => value,
  Heartbeat: (value: Result<'heartbeat'>): Answer<'Heartbeat'> => value,
  Milestone: (value: Result<'recordMilestone'>): Answer<'Milestone'> => value,
  MilestoneList: (value: Result<'listMilestones'>): Answer<'MilestoneList'> => value,
  User: (value: Result<'getUser'>): Answer<'User'> => value,
  UserList: (value: Result<'listUsers'>): Answer<'UserList'> => value,
  Pair: (value: Result<'pairAgent'>): Answer<'Pair'> => value,
  Invite: (value: Result<'getInvite'>): Answer<'Invite'> => value,
  Feed: (value: Result<'liveFeed'>): Answer<'Feed'> => value,
  Task: (value: Result<'getTask'>): Answer<'Task'> => value,
  SellerTask: (value: Result<'completeTask'>): Answer<'SellerTask'> => value,
  TaskList: (value: Result<'listTasks'>): Answer<'TaskList'> => value,
  TaskAwaitingConfirmations: (
    value: TaskBody<'awaiting_confirmations'>,
  ): Answer<'TaskAwaitingConfirmations'> => value,
  PaymentVerified: (value: TaskBody<'verified'>): Answer<'PaymentVerified'> => value,
  PaymentPending: (value: TaskBody<'pending'>): Answer<'PaymentPending'> => value,
  Problem: (value: Problem): Answer<'Problem'> => value,
}

describe('response schemas', () => {
  test('behavior: every answer a route row names has a schema, and the typed ones are checked against their action', () => {
    const named = MARKET_ROUTES.flatMap((row) => [row.ok, ...(row.alsoOk ?? [])].map((ok) => ok.response))
    for (const name of named) expect(RESPONSE_SCHEMAS[name], name).toBeDefined()
    expect(Object.keys(FITS).length).toBeGreaterThan(15)
  })
})
