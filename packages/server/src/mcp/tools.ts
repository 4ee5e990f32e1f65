import {
  AgentListInput,
  CompleteTaskInput,
  CreateTaskInput,
  FeedQueryInput,
  InvalidInputError,
  type MarketplaceActions,
  MilestoneInput,
  RegisterAgentInput,
  UpdateAgentInput,
  UserListInput,
  VerifyPaymentInput,
} from '@agentmarket/core'
import * as v from 'valibot'

/** What a tool call may use besides its arguments: the MCP request's bearer key, if any, and client address. */
export type ToolContext = { apiKey: string | undefined; client: string | null }

/** One MCP tool: its name, what it does, its arguments' schema, and the core action it calls. */
export type Tool = {
  name: string
  description: string
  input: v.ObjectSchema<v.ObjectEntries, undefined>
  run(args: Record<string, unknown>, context: ToolContext): Promise<unknown>
}

const name = v.pipe(v.string(), v.description('The agent name (any case).'))
const agent = v.pipe(v.string(), v.description('The seller agent name.'))
const taskId = v.pipe(v.string(), v.description('The task id (task_…), as create_task returned it.'))

/** `args` without the keys that name the resource (they go in the path on HTTP). */
function bodyOf(args: Record<string, unknown>, ...pathKeys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(args).filter(([key]) => !pathKeys.includes(key)))
}

/** The string argument `key`, or a 400 pointing at it. */
function text(args: Record<string, unknown>, key: string): string {
  const value = args[key]
  if (typeof value === 'string' && value.length > 0) return value
  throw new InvalidInputError(
    'invalid_body',
    `The arguments are invalid (/${key}: must be a non-empty string).`,
    [{ pointer: `/${key}`, detail: 'must be a non-empty string' }],
  )
}

/** Every tool, each calling the same core action as its HTTP route. */
export function marketTools(market: MarketplaceActions): Tool[] {
  return [
    {
      name: 'search_agents',
      description:
        'List agents, most recently active first. q: a literal, case-insensitive substring of name or bio.',
      input: AgentListInput,
      run: (args) => market.listAgents(args),
    },
    {
      name: 'get_agent',
      description: 'One agent: profile, skills with prices, liveness, milestones, trust score, owner.',
      input: v.object({ name }),
      run: (args) => market.getAgent(text(args, 'name')),
    },
    {
      name: 'get_agent_card',
      description: "An agent's A2A v1.0 card, with payment details in _extensions.commerce.",
      input: v.object({ name }),
      run: (args) => market.agentCard(text(args, 'name')),
    },
    {
      name: 'list_users',
      description: 'List community users (owners of agents), newest first; q filters by username or bio.',
      input: UserListInput,
      run: (args) => market.listUsers(args),
    },
    {
      name: 'get_user',
      description: "A user's public profile with the agents it owns.",
      input: v.object({ username: v.pipe(v.string(), v.description('The username (any case).')) }),
      run: (args) => market.getUser(text(args, 'username')),
    },
    {
      name: 'register_agent',
      description:
        'Register an agent. The answer holds its apiKey (shown only once: keep it) and a pairingCode for its owner.',
      input: RegisterAgentInput,
      run: (args) => market.registerAgent(args),
    },
    {
      name: 'update_agent',
      description:
        "Update the fields sent (bio, platform, model, walletAddress, basename, skills). Needs the agent's key as " +
        'the MCP request header Authorization: Bearer <apiKey>.',
      input: v.object({ name, ...UpdateAgentInput.entries }),
      run: (args, { apiKey }) => market.updateAgent(text(args, 'name'), apiKey, bodyOf(args, 'name')),
    },
    {
      name: 'heartbeat',
      description:
        "Report that the agent is live (every 1-5 minutes). Needs the agent's key (Authorization: Bearer).",
      input: v.object({ name }),
      run: (args, { apiKey }) => market.heartbeat(text(args, 'name'), apiKey),
    },
    {
      name: 'record_milestone',
      description:
        "Record a milestone (date YYYY-MM-DD, title, description, proof URL: with a proof it is verified). Needs the agent's key.",
      input: v.object({ name, ...MilestoneInput.entries }),
      run: (args, { apiKey }) => market.recordMilestone(text(args, 'name'), apiKey, bodyOf(args, 'name')),
    },
    {
      name: 'create_task',
      description:
        'Order a skill from an agent. A paid skill starts pending_payment with payment instructions and next_steps; ' +
        "send tx_hash and payer_signature (the paying wallet's EIP-712 signature of the agent card's " +
        'commerce.payer_proof) when already paid on chain. A free skill starts paid.',
      input: v.object({ agent, ...CreateTaskInput.entries }),
      run: async (args, { client }) =>
        (await market.createTask(text(args, 'agent'), bodyOf(args, 'agent'), { client })).body,
    },
    {
      name: 'get_task',
      description: 'A task by its id: poll until status is completed, then read result_url.',
      input: v.object({ agent, task_id: taskId }),
      run: (args) => market.getTask(text(args, 'agent'), text(args, 'task_id')),
    },
    {
      name: 'verify_payment',
      description:
        'Verify the on-chain USDC payment of a task by its transaction hash and payer_signature (the paying ' +
        "wallet's EIP-712 signature of the task's payment.payer_proof with message.txHash set). verified: true " +
        'when paid; state pending while it has too few confirmations (call again later).',
      input: v.object({ agent, task_id: taskId, ...VerifyPaymentInput.entries }),
      run: async (args) =>
        (
          await market.verifyPayment(
            text(args, 'agent'),
            text(args, 'task_id'),
            bodyOf(args, 'agent', 'task_id'),
          )
        ).body,
    },
    {
      name: 'complete_task',
      description: "Deliver a paid task with its result_url (the seller's key: Authorization: Bearer).",
      input: v.object({ agent, task_id: taskId, ...CompleteTaskInput.entries }),
      run: (args, { apiKey }) =>
        market.completeTask(
          text(args, 'agent'),
          text(args, 'task_id'),
          apiKey,
          bodyOf(args, 'agent', 'task_id'),
        ),
    },
    {
      name: 'live_feed',
      description: 'Recent marketplace events, newest first (registrations, skills, milestones, orders).',
      input: FeedQueryInput,
      run: (args) => market.liveFeed(args),
    },
  ]
}
