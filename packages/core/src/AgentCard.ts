import type { AgentRecord } from './Agent.ts'
import { agentLinks, heartbeatView } from './AgentView.ts'
import { chainName, type MarketConfig } from './Config.ts'
import type { MilestoneView } from './Milestone.ts'
import { amountToNumber } from './Money.ts'
import { DEPOSIT_ABI, DEPOSIT_SIGNATURE } from './payments/Escrow.ts'
import { payerProofTypedData } from './payments/PayerProof.ts'
import type { SkillRecord } from './Skill.ts'

/** A skill in an A2A card; purchasable ones carry pricing. */
export type CardSkill = {
  id: string
  name: string
  description: string
  tags: string[]
  url: string
  type: SkillRecord['type']
  inputModes: string[]
  outputModes: string[]
  pricing?: { amount: number; currency: 'USDC'; amountBaseUnits: string }
  /** The JSON Schema (2020-12) an order's params must fit, when the seller declared one. */
  inputSchema?: Record<string, unknown>
  /**
   * `after_acceptance` when the seller reveals a delivery's result_url only once the buyer accepts it (or silence
   * does), showing its keccak256 (result_commitment) before; absent when results show on delivery.
   */
  reveal?: 'after_acceptance'
}

/** An A2A v1.0 agent card with the marketplace's `_extensions`. */
export type AgentCard = ReturnType<typeof buildAgentCard>

/**
 * The URIs of the marketplace's A2A extensions: they name the extension's definition (docs/a2a.md), not one market,
 * so a client recognizes them on any agentmarket. Their params carry what SPEC.md's card keeps outside A2A's model.
 */
export const A2A_EXTENSION_URIS = {
  commerce: 'urn:agentmarket:a2a:commerce:v1',
  heartbeat: 'urn:agentmarket:a2a:heartbeat:v1',
  provenance: 'urn:agentmarket:a2a:provenance:v1',
} as const

/** The A2A paths the marketplace serves for an agent: JSON-RPC at the base, HTTP+JSON under `/rest`. */
export function a2aInterfaces(baseUrl: string, agentName: string | null) {
  const base =
    agentName === null ? `${baseUrl}/a2a` : `${baseUrl}/a2a/agents/${encodeURIComponent(agentName)}`
  return [
    { url: base, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  ]
}

/** How an A2A client may authenticate: nothing to order or read a task; a seller's key lists its whole queue. */
export const A2A_SECURITY = {
  securitySchemes: {
    sellerKey: {
      httpAuthSecurityScheme: {
        scheme: 'Bearer',
        description:
          "The seller agent's API key (amk_…): ListTasks without contextId then lists the seller's whole queue. Buyers need none.",
      },
    },
  },
  // An empty requirement first: every operation also works without credentials.
  securityRequirements: [{ schemes: {} }, { schemes: { sellerKey: { list: [] as string[] } } }],
}

function cardSkill(skill: SkillRecord, pageUrl: string): CardSkill {
  const card: CardSkill = {
    id: skill.slug,
    name: skill.name,
    description: skill.description ?? skill.name,
    tags: [skill.type, skill.slug],
    url: skill.url ?? `${pageUrl}#skill-${skill.slug}`,
    type: skill.type,
    inputModes: ['application/json'],
    outputModes: ['application/json'],
  }
  if (skill.input) card.inputSchema = skill.input
  if (skill.reveal === 'after_acceptance') card.reveal = skill.reveal
  if (skill.priceBaseUnits !== null) {
    card.pricing = {
      amount: amountToNumber(skill.priceBaseUnits),
      currency: 'USDC',
      amountBaseUnits: skill.priceBaseUnits.toString(),
    }
  }
  return card
}

function commerce(agent: AgentRecord, config: MarketConfig) {
  const { chainId, usdcContract, escrowContract } = config.chain
  return {
    chain: chainName(chainId),
    chainId,
    payment_wallet: agent.walletAddress,
    usdc_contract: usdcContract,
    escrow_contract: escrowContract,
    deposit_abi: DEPOSIT_SIGNATURE,
    deposit_abi_json: DEPOSIT_ABI,
    /** The job escrow paid orders may be funded in (docs/jobs.md: each task lists its calls); null when none. */
    job_escrow_contract: config.chain.jobEscrowContract ?? null,
    flow: escrowContract
      ? 'escrow-first: approve USDC, call deposit(), then POST the task with tx_hash and payer_signature (payer_proof signed by the depositing wallet)'
      : "card-and-verify: POST the task, send USDC to payment_wallet, then POST verify-payment with tx_hash and payer_signature (the task's payment.payer_proof signed by the paying wallet)",
    /** What the paying wallet signs for an order paid before it exists: task '', message.txHash = the payment. */
    payer_proof: payerProofTypedData(chainId, {
      market: config.baseUrl,
      agent: agent.name,
      task: '',
      txHash: null,
    }),
  }
}

/**
 * The A2A v1.0 card of an agent: SPEC.md's fields, the v1.0 `supportedInterfaces`, and `_extensions`.
 * @example buildAgentCard(agent, milestones, new Date(), config)
 */
export function buildAgentCard(
  agent: AgentRecord,
  milestones: MilestoneView[],
  now: Date,
  config: MarketConfig,
) {
  const { pageUrl } = agentLinks(config.baseUrl, agent.name)
  const skills = agent.skills.map((skill) => cardSkill(skill, pageUrl))
  const provenance = {
    platform: agent.platform,
    model: agent.model ?? '',
    registryRegistered: true,
    birthday: agent.createdAt.toISOString(),
    birthdayVerified: true,
    marketUrl: config.baseUrl,
    owner: agent.ownerUsername
      ? {
          username: agent.ownerUsername,
          profileUrl: `${config.baseUrl}/users/${encodeURIComponent(agent.ownerUsername)}`,
        }
      : null,
  }
  const heartbeat = heartbeatView(agent, now)
  const payment = commerce(agent, config)
  return {
    name: agent.name,
    description: agent.bio ?? '',
    url: pageUrl,
    supportedInterfaces: a2aInterfaces(config.baseUrl, agent.name),
    version: `1.0.${agent.revision}`,
    provider: config.provider,
    documentationUrl: pageUrl,
    // The server serves the marketplace's icon there (an SVG).
    iconUrl: `${config.baseUrl}/favicon.svg`,
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [
        {
          uri: A2A_EXTENSION_URIS.commerce,
          description:
            "How to pay this agent's skills: the payment chain, USDC, the seller's wallet, escrow, the payer proof, and each skill's type, price, input schema and reveal (after_acceptance: result_url only once the buyer accepts, its keccak256 before).",
          required: false,
          params: { ...payment, skills: skillCommerce(skills) },
        },
        {
          uri: A2A_EXTENSION_URIS.heartbeat,
          description:
            "Liveness from the agent's heartbeats: live (5 min), idle (30 min) or off, and when it was last seen.",
          required: false,
          params: heartbeat,
        },
        {
          uri: A2A_EXTENSION_URIS.provenance,
          description:
            'Who the agent is on the marketplace: platform, model, registration, owner and milestones.',
          required: false,
          params: { ...provenance, milestones },
        },
      ],
    },
    ...A2A_SECURITY,
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills,
    authentication: { schemes: ['none'] },
    _extensions: { ...provenance, heartbeat, milestones, commerce: payment },
  }
}

/**
 * Each skill's commerce (type, page, price, input schema, and a reveal after acceptance), by skill id: the part of a
 * skill A2A has no field for.
 */
function skillCommerce(skills: CardSkill[]) {
  return Object.fromEntries(
    skills.map(({ id, type, url, pricing, inputSchema, reveal }) => [
      id,
      {
        type,
        url,
        ...(pricing ? { pricing } : {}),
        ...(inputSchema ? { inputSchema } : {}),
        ...(reveal ? { reveal } : {}),
      },
    ]),
  )
}
