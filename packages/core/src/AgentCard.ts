import { type AgentRecord, agentLinks, heartbeatView } from './Agent.ts'
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
}

/** An A2A v1.0 agent card with the marketplace's `_extensions`. */
export type AgentCard = ReturnType<typeof buildAgentCard>

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
  const apiUrl = `${config.baseUrl}/api/agents/${encodeURIComponent(agent.name)}`
  return {
    name: agent.name,
    description: agent.bio ?? '',
    url: pageUrl,
    supportedInterfaces: [{ url: apiUrl, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
    version: `1.0.${agent.revision}`,
    provider: config.provider,
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: agent.skills.map((skill) => cardSkill(skill, pageUrl)),
    authentication: { schemes: ['none'] },
    _extensions: {
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
      heartbeat: heartbeatView(agent, now),
      milestones,
      commerce: commerce(agent, config),
    },
  }
}
