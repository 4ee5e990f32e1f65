import { walletProofMessage, walletProofTypedData } from '@agentmarket/core'
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import { signedBudget } from '../../../packages/server/src/testing/budgets.ts'
import type { CallAnswer, CallInit } from '../../support/examples.ts'

// The fixture world every interface of the access matrix is asked about: two sellers with one order each, the first
// seller's owner, wallets, webhooks and a budget, made once per host through that host's own HTTP routes.

/** A JSON caller of one host (`jsonCaller`): the path includes its mount (`/api/...`). */
export type Caller = (method: string, path: string, init?: CallInit) => Promise<CallAnswer>

/** Who asks: every principal the matrix has a column for. */
export const PRINCIPALS = [
  'anonymous',
  'seller',
  'otherSeller',
  'buyer',
  'otherBuyer',
  'ownerWallet',
  'ownerLegacyProof',
  'strangerWallet',
] as const
/** One principal. */
export type Principal = (typeof PRINCIPALS)[number]

/** How a principal proves a wallet in request headers: EIP-712 (current) or the deprecated EIP-191 text. */
export type ProofScheme = 'eip712' | 'eip191'

/** An agent of the world, as its seller holds it. */
export type WorldAgent = { name: string; key: string; pairingCode: string }

/** What one principal holds: an API key, a task id (its order's), a wallet, how it signs request proofs. */
export type Credentials = {
  key?: string
  /** The task id it presents on task paths (its own order's); absent: it holds none, and presents an unknown id. */
  task?: string
  /** The wallet it signs with (a payout, buyer or owner wallet; a throwaway one for the anonymous). */
  wallet: PrivateKeyAccount
  /** It proves its wallet in request headers (X-Wallet-Signature) with this scheme. */
  proof?: ProofScheme
}

/** The world: its host, agents, tasks, principals, and every secret with who may hold it. */
export type World = {
  call: Caller
  /** The market's BASE_URL, which every wallet proof and typed data names. */
  market: string
  seller: WorldAgent
  otherSeller: WorldAgent
  /** The username owning `seller`. */
  owner: string
  /** The buyer's order with `seller` (completed; a webhook of the buyer's on it). */
  task: string
  /** The other buyer's order with `otherSeller`. */
  otherTask: string
  /** The seller's own webhook endpoint's id. */
  sellerWebhook: string
  /** The buyer's endpoint on `task`. */
  taskWebhook: string
  /** Its secret: the buyer's credential for reading and deleting it (the seller knows the task id too). */
  taskWebhookSecret: string
  principals: Record<Principal, Credentials>
  /** Each secret of the world and the principals entitled to see it; an answer to anyone else must not hold it. */
  secrets: { value: string; label: string; holders: readonly Principal[] }[]
  /** A new agent of the seller's, paired to the owner unless `paired` is false, for a cell that uses it up. */
  freshAgent(options?: { paired?: boolean }): Promise<WorldAgent>
  /** A new order of the seller's free skill (with a review window when `review`), named to the buyer's wallet. */
  freshTask(options?: { review?: boolean; delivered?: boolean }): Promise<string>
  /** A signed budget body for the seller by `wallet`, issued after every earlier one. */
  budgetBody(wallet: PrivateKeyAccount): Promise<Record<string, unknown>>
  /** Wallet proof headers for a request (method, the full path called, the exact body). */
  proofHeaders(
    wallet: PrivateKeyAccount,
    scheme: ProofScheme,
    method: string,
    path: string,
    body: string,
  ): Promise<Record<string, string>>
}

const wallet = () => privateKeyToAccount(generatePrivateKey())

/** The seller's skills: free, free with a review window, paid. */
const SKILLS = [
  { name: 'echo', type: 'free' },
  // Revealed after acceptance: the buyer's delivered essay shows its commitment, never its URL (issue 37, mechanism 7).
  { name: 'essay', type: 'free', review_seconds: 3600, reveal: 'after_acceptance' },
  { name: 'report', type: 'purchasable', price: 1 },
]

/** The result URL the seller delivers for `task`. */
const resultOf = (task: string) => `https://results.example/${task}`

/** Throws unless the answer has `status`. */
function expectStatus(answer: CallAnswer, status: number, what: string): CallAnswer {
  if (answer.status !== status) throw new Error(`${what}: ${answer.status} ${JSON.stringify(answer.json)}`)
  return answer
}

/** Clocks for proofs that never repeat: each proof is accepted once, so two must never sign the same instant. */
function proofClock() {
  let lastMs = 0
  let lastSeconds = 0
  return {
    ms: () => (lastMs = Math.max(Date.now(), lastMs + 1)),
    // EIP-191 proofs are in seconds: count up from a minute ago (inside the five-minute window).
    seconds: () => (lastSeconds = Math.max(Math.floor(Date.now() / 1000) - 60, lastSeconds + 1)),
  }
}

/** Builds the world through `call` on the market at `market` (its BASE_URL); `prefix` is the mount (`/api`). */
export async function buildWorld(call: Caller, market: string, prefix = '/api'): Promise<World> {
  const clock = proofClock()
  let budgets = 0
  const wallets = {
    seller: wallet(),
    otherSeller: wallet(),
    buyer: wallet(),
    otherBuyer: wallet(),
    owner: wallet(),
    stranger: wallet(),
    anonymous: wallet(),
  }

  async function proofHeaders(
    signer: PrivateKeyAccount,
    scheme: ProofScheme,
    method: string,
    path: string,
    body: string,
  ): Promise<Record<string, string>> {
    if (scheme === 'eip191') {
      const timestamp = String(clock.seconds())
      const signature = await signer.signMessage({ message: walletProofMessage(method, path, timestamp) })
      return { 'x-wallet-signature': signature, 'x-wallet-timestamp': timestamp }
    }
    const timestamp = BigInt(clock.ms())
    const bytes = new TextEncoder().encode(body)
    const typed = walletProofTypedData({ market, method, path, body: bytes }, timestamp)
    return {
      'x-wallet-signature': await signer.signTypedData(typed),
      'x-wallet-timestamp': String(timestamp),
      'x-wallet-scheme': 'eip712',
    }
  }

  async function register(name: string, walletAddress: string) {
    const { json } = expectStatus(
      await call('POST', `${prefix}/agents/register`, { body: { name, walletAddress, skills: SKILLS } }),
      200,
      `register ${name}`,
    )
    return { name, key: json.apiKey as string, pairingCode: json.pairingCode as string }
  }

  async function pair(username: string, pairingCode: string) {
    const path = `${prefix}/community/users/${username}/pair-agent`
    const raw = JSON.stringify({ pairingCode })
    const headers = await proofHeaders(wallets.owner, 'eip712', 'POST', path, raw)
    expectStatus(
      await call('POST', path, { raw, headers: { ...headers, 'x-wallet-address': wallets.owner.address } }),
      200,
      `pair to ${username}`,
    )
  }

  async function order(agent: WorldAgent, skill: string, buyerWallet: string) {
    const { json } = expectStatus(
      await call('POST', `${prefix}/agents/${agent.name}/tasks`, {
        body: { skill, buyer_wallet: buyerWallet, params: { topic: 'matrix' } },
      }),
      201,
      `order ${skill} of ${agent.name}`,
    )
    return json.task_id as string
  }

  async function deliver(agent: WorldAgent, task: string) {
    expectStatus(
      await call('POST', `${prefix}/agents/${agent.name}/tasks/${task}/complete`, {
        key: agent.key,
        body: { result_url: resultOf(task) },
      }),
      200,
      `deliver ${task}`,
    )
  }

  async function hook(path: string, url: string, key?: string) {
    const { json } = expectStatus(
      await call('POST', `${prefix}${path}`, { body: { url }, ...(key ? { key } : {}) }),
      201,
      `webhook ${path}`,
    )
    return { id: json.id as string, secret: json.secret as string }
  }

  const seller = await register('seller', wallets.seller.address)
  const otherSeller = await register('rival', wallets.otherSeller.address)
  await pair('owner', seller.pairingCode)
  // The buyer's order is under review: its result URL is the seller's until the buyer accepts.
  const task = await order(seller, 'essay', wallets.buyer.address)
  await deliver(seller, task)
  const otherTask = await order(otherSeller, 'echo', wallets.otherBuyer.address)
  const sellerHook = await hook(`/agents/seller/webhooks`, 'https://seller-hooks.example.com/in', seller.key)
  const buyerToken = `buyer-token-${crypto.randomUUID()}`
  const taskHook = await hook(
    `/agents/seller/tasks/${task}/webhooks`,
    `https://buyer-hooks.example.com/in?token=${buyerToken}`,
  )
  const otherToken = `other-buyer-token-${crypto.randomUUID()}`
  const otherTaskHook = await hook(
    `/agents/rival/tasks/${otherTask}/webhooks`,
    `https://other-buyer-hooks.example.com/in?token=${otherToken}`,
  )

  async function budgetBody(signer: PrivateKeyAccount) {
    budgets += 1
    const now = Date.now()
    const signed = await signedBudget(
      signer,
      {
        agent: 'seller',
        perTaskMax: 5,
        perDayMax: 20,
        expiresAt: new Date(now + 86_400_000),
        // Each later budget is issued a second after the one before (a later issued_at replaces it).
        issuedAt: new Date(Math.floor(now / 1000) * 1000 - 3_600_000 + budgets * 1000),
      },
      market,
    )
    return signed
  }
  expectStatus(
    await call('PUT', `${prefix}/agents/seller/budget`, { body: await budgetBody(wallets.owner) }),
    200,
    'set the budget',
  )
  const invitePath = `${prefix}/community/users/owner/invite`
  const invite = expectStatus(
    await call('GET', invitePath, {
      headers: await proofHeaders(wallets.owner, 'eip712', 'GET', invitePath, ''),
    }),
    200,
    'read the invite code',
  ).json

  let agents = 0
  return {
    call,
    market,
    seller,
    otherSeller,
    owner: 'owner',
    task,
    otherTask,
    sellerWebhook: sellerHook.id,
    taskWebhook: taskHook.id,
    taskWebhookSecret: taskHook.secret,
    principals: {
      anonymous: { wallet: wallets.anonymous },
      seller: { key: seller.key, task, wallet: wallets.seller },
      otherSeller: { key: otherSeller.key, task: otherTask, wallet: wallets.otherSeller },
      buyer: { task, wallet: wallets.buyer },
      otherBuyer: { task: otherTask, wallet: wallets.otherBuyer },
      ownerWallet: { wallet: wallets.owner, proof: 'eip712' },
      ownerLegacyProof: { wallet: wallets.owner, proof: 'eip191' },
      strangerWallet: { wallet: wallets.stranger, proof: 'eip712' },
    },
    secrets: [
      { value: seller.key, label: "the seller's API key", holders: ['seller'] },
      { value: otherSeller.key, label: "the other seller's API key", holders: ['otherSeller'] },
      { value: otherSeller.pairingCode, label: "the other seller's pairing code", holders: ['otherSeller'] },
      { value: sellerHook.secret, label: "the seller's webhook secret", holders: ['seller'] },
      { value: task, label: "the buyer's task id", holders: ['seller', 'buyer'] },
      {
        value: resultOf(task),
        label: "the result URL of the buyer's delivery under review",
        holders: ['seller'],
      },
      { value: otherTask, label: "the other buyer's task id", holders: ['otherSeller', 'otherBuyer'] },
      { value: taskHook.secret, label: "the buyer's task webhook secret", holders: ['buyer'] },
      { value: buyerToken, label: "the buyer's task webhook URL", holders: ['buyer'] },
      { value: otherTaskHook.secret, label: "the other buyer's webhook secret", holders: ['otherBuyer'] },
      {
        value: invite.inviteCode,
        label: "the owner's invite code",
        holders: ['ownerWallet', 'ownerLegacyProof'],
      },
      { value: otherToken, label: "the other buyer's task webhook URL", holders: ['otherBuyer'] },
    ],
    async freshAgent({ paired = true } = {}) {
      agents += 1
      const fresh = await register(`fresh-${agents}`, wallets.seller.address)
      if (paired) await pair('owner', fresh.pairingCode)
      return fresh
    },
    async freshTask({ review = false, delivered = false } = {}) {
      const id = await order(seller, review ? 'essay' : 'echo', wallets.buyer.address)
      if (delivered) await deliver(seller, id)
      return id
    },
    budgetBody,
    proofHeaders,
  }
}
