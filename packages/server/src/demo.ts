import {
  agentLinks,
  type Clock,
  cryptoRandom,
  feedEvents,
  generateId,
  jobSteps,
  Marketplace,
  type MarketplaceActions,
  manualClock,
  type Platform,
  type ProvedRequest,
  type Registration,
  type Store,
  slugify,
  type TaskRecord,
  type TaskView,
  WALLET_PROOF_SCHEME,
  walletProofTypedData,
} from '@agentmarket/core'
import { type Address, getAddress, keccak256, stringToHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { openMarketDatabase, printableDatabaseUrl } from './database.ts'
// The demo's agents, skills and users: data, kept apart from the code that seeds them.
import seeds from './demo/seeds.json'
import { marketConfig, type Settings } from './env.ts'

// ---------------------------------------------------------------------------------------------------------------
// Data: twelve domains of three agents each, 70 purchasable skills in all, owners and milestone templates.
// ---------------------------------------------------------------------------------------------------------------

type AgentSeed = { name: string; platform: Platform; model: string; bio: string; freeOnly?: boolean }
type SkillSeed = { name: string; price: number; sla: string; description: string; slug?: string }
type Domain = { key: string; agents: AgentSeed[]; skills: SkillSeed[]; free: string[] }

/** The seed of every random choice: change it for another, equally reproducible, market. */
const DEMO_SEED = 'agentmarket-demo-1'

const DOMAINS: Domain[] = seeds.domains as Domain[]

/** A community user; `domains` are the keys of the domains whose agents they may own. */
type UserSeed = { username: string; domains: string[]; bio: string; showcase: Record<string, unknown> }

const USERS: UserSeed[] = seeds.users as UserSeed[]

type MilestoneSeed = { title: string; description?: string; proof: (agent: string) => string }

// Proofs point at reserved `.example` hosts (RFC 2606): believable, and never someone's real page.
const MILESTONES: MilestoneSeed[] = [
  {
    title: 'First 10 paid orders delivered',
    proof: (agent) => `https://receipts.example/${agent}/first-10`,
  },
  {
    title: '100 orders delivered',
    description: 'Every one within its SLA.',
    proof: (agent) => `https://receipts.example/${agent}/100`,
  },
  {
    title: '99.9% uptime over 30 days',
    description: 'Measured by an external monitor from three regions.',
    proof: (agent) => `https://status.example/${agent}/30-days`,
  },
  {
    title: 'Shipped v2 with streaming results',
    proof: (agent) => `https://changelog.example/${agent}/v2`,
  },
  {
    title: 'Cut median delivery time in half',
    description: 'Batched model calls and cached the slow lookups.',
    proof: (agent) => `https://blog.example/${agent}/faster`,
  },
  {
    title: 'Passed an independent quality audit',
    proof: (agent) => `https://audits.example/reports/${agent}`,
  },
  {
    title: 'Open-sourced the evaluation set',
    description: 'So buyers can check the quality claims themselves.',
    proof: (agent) => `https://git.example/${agent}/eval-set`,
  },
  {
    title: '1,000 free requests served',
    proof: (agent) => `https://stats.example/${agent}/free-tier`,
  },
  {
    title: 'Moved to a faster model',
    proof: (agent) => `https://changelog.example/${agent}/model-upgrade`,
  },
  {
    title: 'A month without a failed delivery',
    proof: (agent) => `https://status.example/${agent}/incidents`,
  },
  {
    title: 'First enterprise customer',
    description: 'A team of 400 now sends its daily work here.',
    proof: (agent) => `https://blog.example/${agent}/enterprise`,
  },
  {
    title: 'Published a public changelog',
    proof: (agent) => `https://changelog.example/${agent}`,
  },
]

/** How many agents end up live, idle, or off; the rest never sent a heartbeat. */
const LIVENESS_MIX = { live: 13, idle: 8, off: 11 }
/** The share of agents claimed by their domain's owner, beyond one sure agent per domain. */
const OWNED_SHARE = 0.55
/** Orders still awaiting payment, so the work queues are not all finished. */
const PENDING_ORDERS = 5

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

// ---------------------------------------------------------------------------------------------------------------
// Seeding.
// ---------------------------------------------------------------------------------------------------------------

/** A clock that seeding can move: `manualClock` from `@agentmarket/core`. */
export type DemoClock = Clock & { set(at: Date): void }

/** What seeding produced, for the summary line and the tests. */
export type DemoSummary = {
  agents: number
  users: number
  purchasableSkills: number
  freeSkills: number
  milestones: number
  verifiedMilestones: number
  completedTasks: number
  live: number
  idle: number
  off: number
  /** A few agents worth opening first, with their page addresses. */
  visit: { name: string; url: string }[]
}

/** Seeding refused: the database already holds agents. */
export class DemoRefusedError extends Error {
  override readonly name = 'DemoRefusedError'
}

/** A small seeded PRNG (mulberry32 over an FNV-1a hash of the seed): the same seed, the same market. */
function seededRandom(seed: string) {
  let state = 2166136261
  for (const char of seed) state = Math.imul(state ^ char.charCodeAt(0), 16777619)
  const next = () => {
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const between = (min: number, max: number) => min + (max - min) * next()
  return {
    between,
    int: (min: number, max: number) => Math.floor(between(min, max + 1)),
    chance: (probability: number) => next() < probability,
    pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T,
    shuffle<T>(list: readonly T[]): T[] {
      const out = [...list]
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1))
        ;[out[i], out[j]] = [out[j] as T, out[i] as T]
      }
      return out
    },
  }
}
type Prng = ReturnType<typeof seededRandom>

/** Milliseconds of an SLA such as "30 seconds", "2 hours" or "3 days". */
function slaMs(sla: string): number {
  const match = /^(\d+) (second|minute|hour|day)s?$/.exec(sla)
  const units = { second: 1000, minute: MINUTE, hour: HOUR, day: DAY }
  if (!match) throw new Error(`demo SLA "${sla}" is not "<n> <unit>"`)
  return Number(match[1]) * units[match[2] as keyof typeof units]
}

// Nobody holds the keys of these addresses, so a real payment to one would be lost: they look plainly fake.
function fakeWallet(index: number): Address {
  return getAddress(`0xde30${'0'.repeat(32)}${index.toString(16).padStart(4, '0')}`)
}

/** A 32-byte value derived from the seed and a label: tx hashes and the demo owners' wallet keys. */
const derived = (label: string) => keccak256(stringToHex(`${DEMO_SEED}/${label}`))

const isoDate = (at: number) => new Date(at).toISOString().slice(0, 10)

type Liveness = 'live' | 'idle' | 'off' | 'never'

/** One agent's part of the market, decided before anything is written. */
type AgentPlan = {
  seed: AgentSeed
  /** Wire skills at registration; `later`, when set, is published by an update. */
  skills: (string | Record<string, unknown>)[]
  later: Record<string, unknown> | null
  /** Purchasable skills on sale from registration on: what paid orders may buy. */
  forSale: SkillSeed[]
  free: string[]
  wallet: Address | null
  liveness: Liveness
  registeredAt: number
  /** The agent's last heartbeat, or for agents that never beat the end of their short first session. */
  end: number
  owner: UserSeed | null
}

const skillBody = (skill: SkillSeed) => ({
  name: skill.name,
  slug: skill.slug ?? slugify(skill.name),
  type: 'purchasable',
  price: skill.price,
  sla: skill.sla,
  description: skill.description,
})

/** Decides every agent's skills, liveness, age and owner. */
function planAgents(random: Prng, now: number): AgentPlan[] {
  const seeds = DOMAINS.flatMap((domain) => domain.agents)
  const { live, idle, off } = LIVENESS_MIX
  const mix = [
    ...Array<Liveness>(live).fill('live'),
    ...Array<Liveness>(idle).fill('idle'),
    ...Array<Liveness>(off).fill('off'),
  ]
  const livenessOf = random.shuffle([...mix, ...Array<Liveness>(seeds.length - mix.length).fill('never')])

  let index = 0
  return DOMAINS.flatMap((domain) => {
    const sellers = domain.agents.filter((agent) => !agent.freeOnly)
    const owner = USERS.find((user) => user.domains.includes(domain.key)) ?? null
    const surelyOwned = random.pick(domain.agents)
    return domain.agents.map((seed) => {
      const mine = seed.freeOnly
        ? []
        : domain.skills.filter((_, position) => sellers[position % sellers.length] === seed)
      const free = seed.freeOnly ? domain.free : random.chance(0.6) ? [random.pick(domain.free)] : []
      const liveness = livenessOf[index] ?? 'never'
      const lastSeen = lastSeenAt(random, liveness, now)
      const registeredAt =
        liveness === 'never' ? now - random.between(1, 9) * DAY : now - random.between(10, 150) * DAY
      const later =
        liveness !== 'never' && mine.length >= 2 && random.chance(0.25) ? (mine.at(-1) ?? null) : null
      const forSale = later ? mine.slice(0, -1) : mine
      const plan: AgentPlan = {
        seed,
        skills: [...forSale.map(skillBody), ...free],
        later: later && skillBody(later),
        forSale,
        free,
        wallet: mine.length > 0 ? fakeWallet(index + 1) : null,
        liveness,
        registeredAt,
        end: lastSeen ?? registeredAt + 2 * HOUR,
        owner: seed === surelyOwned || random.chance(OWNED_SHARE) ? owner : null,
      }
      index += 1
      return plan
    })
  })
}

/** When an agent of that liveness last beat, relative to `now`; null when it never did. */
function lastSeenAt(random: Prng, liveness: Liveness, now: number): number | null {
  if (liveness === 'live') return now - random.between(5 / 60, 4) * MINUTE
  if (liveness === 'idle') return now - random.between(6, 28) * MINUTE
  if (liveness === 'off')
    return now - (random.chance(0.4) ? random.between(40, 600) * MINUTE : random.between(1, 6) * DAY)
  return null
}

/** Actions to run in time order, each with the clock set to its instant, so the feed reads chronologically. */
function timeline() {
  const steps: { at: number; run: () => Promise<unknown> }[] = []
  return {
    add(at: number, run: () => Promise<unknown>) {
      steps.push({ at: Math.round(at), run })
    },
    async play(clock: DemoClock) {
      // Array.prototype.sort is stable, so steps at the same instant keep the order they were planned in.
      for (const step of steps.sort((a, b) => a.at - b.at)) {
        clock.set(new Date(step.at))
        await step.run()
      }
    },
  }
}
type Timeline = ReturnType<typeof timeline>

/** Running counts and the registrations, filled in as the timeline plays. */
type Tally = {
  keys: Map<string, Registration>
  milestones: number
  verifiedMilestones: number
  completedTasks: number
}

const keyOf = (tally: Tally, name: string): Registration => {
  const registration = tally.keys.get(name)
  if (!registration) throw new Error(`demo: ${name} is used before it registered`)
  return registration
}

/** Registration, wallet, a later skill, the first and the last heartbeat, and the claim by an owner. */
function planProfile(
  market: MarketplaceActions,
  line: Timeline,
  random: Prng,
  plan: AgentPlan,
  tally: Tally,
  baseUrl: string,
) {
  const { seed, registeredAt, end } = plan
  const key = () => keyOf(tally, seed.name).apiKey
  line.add(registeredAt, async () => {
    const body = {
      name: seed.name,
      bio: seed.bio,
      platform: seed.platform,
      model: seed.model,
      skills: plan.skills,
    }
    tally.keys.set(seed.name, await market.registerAgent(body))
  })
  if (plan.wallet) {
    const body =
      seed.platform === 'primaryplatform'
        ? { walletAddress: plan.wallet, basename: `${seed.name.replace(/[^a-z0-9]/g, '')}.base.eth` }
        : { walletAddress: plan.wallet }
    line.add(registeredAt + random.between(3, 40) * MINUTE, () => market.updateAgent(seed.name, key(), body))
  }
  if (plan.later) {
    const skills = [...plan.skills, plan.later]
    const at = random.between(registeredAt + 2 * DAY, end - HOUR)
    line.add(at, () => market.updateAgent(seed.name, key(), { skills }))
  }
  if (plan.liveness !== 'never') {
    line.add(registeredAt + random.between(1, 15) * MINUTE, () => market.heartbeat(seed.name, key()))
    line.add(end, () => market.heartbeat(seed.name, key()))
  }
  const owner = plan.owner
  if (owner) {
    const at = random.between(registeredAt + 20 * MINUTE, Math.min(registeredAt + 3 * DAY, end - MINUTE))
    const wallet = ownerAccount(owner).address
    line.add(at, async () => {
      const body = { pairingCode: keyOf(tally, seed.name).pairingCode }
      const path = `/api/community/users/${owner.username}/pair-agent`
      await market.pairAgent(
        owner.username,
        wallet,
        await signedBy(owner, baseUrl, 'POST', path, at, body),
        body,
      )
    })
    return { owner, at }
  }
  return null
}

/** The demo owner's wallet: its key derives from the seed, so it can sign its pairings and profile edit. */
const ownerAccount = (user: UserSeed) => privateKeyToAccount(derived(`user/${user.username}`))

/** A request with JSON `body` as the owner's wallet proves it (EIP-712) at `at` (epoch ms) to the market `baseUrl`. */
async function signedBy(
  user: UserSeed,
  baseUrl: string,
  method: string,
  path: string,
  at: number,
  body: unknown,
): Promise<ProvedRequest> {
  const bytes = new TextEncoder().encode(JSON.stringify(body))
  const timestamp = Math.floor(at)
  const typed = walletProofTypedData({ market: baseUrl, method, path, body: bytes }, BigInt(timestamp))
  const signature = await ownerAccount(user).signTypedData(typed)
  return {
    proof: { signature, timestamp: String(timestamp), scheme: WALLET_PROOF_SCHEME },
    method,
    path,
    body: bytes,
  }
}

/** Each owner fills in a profile a few minutes after their first pairing, signed by their wallet. */
function planProfiles(
  market: MarketplaceActions,
  line: Timeline,
  random: Prng,
  firstPairing: Map<UserSeed, number>,
  baseUrl: string,
) {
  for (const [user, pairedAt] of firstPairing) {
    const at = pairedAt + random.between(2, 4) * MINUTE
    line.add(at, async () => {
      const body = { bio: user.bio, showcase: user.showcase }
      const signed = await signedBy(user, baseUrl, 'PUT', `/api/community/users/${user.username}`, at, body)
      await market.updateUser(user.username, signed, body)
    })
  }
}

/** Zero to four milestones between the first day and the last heartbeat; some with a proof (verified). */
function planMilestones(
  market: MarketplaceActions,
  line: Timeline,
  random: Prng,
  plan: AgentPlan,
  tally: Tally,
) {
  if (plan.liveness === 'never' || !random.chance(0.85)) return
  const name = plan.seed.name
  for (const milestone of random.shuffle(MILESTONES).slice(0, random.int(1, 4))) {
    const at = random.between(plan.registeredAt + DAY, plan.end - MINUTE)
    const proof = random.chance(0.55) ? milestone.proof(name) : undefined
    const body = { date: isoDate(at), title: milestone.title, description: milestone.description, proof }
    line.add(at, async () => {
      const recorded = await market.recordMilestone(name, keyOf(tally, name).apiKey, body)
      tally.milestones += 1
      if (recorded.trust === 'verified') tally.verifiedMilestones += 1
    })
  }
}

/** The demo's paying wallets: a dozen, so that paid tasks credit trust from several buyers, as real ones would. */
const DEMO_BUYERS = Array.from({ length: 12 }, (_, i) => getAddress(derived(`buyer/${i}`).slice(0, 42)))

/**
 * Completed paid orders. Their payment would need a real chain, so they are written to the store directly as
 * transfers with tx hashes derived from the seed, bought by `demo-buyer` from one of DEMO_BUYERS: demo data only,
 * never a real payment.
 */
function planPaidTasks(store: Store, line: Timeline, random: Prng, plan: AgentPlan, tally: Tally) {
  if (plan.liveness === 'never' || !plan.wallet || plan.forSale.length === 0) return
  const count = random.pick([0, 0, 1, 2, 3, 3, 4, 5, 6, 8])
  const name = plan.seed.name
  for (let n = 0; n < count; n++) {
    const skill = random.pick(plan.forSale)
    const took = slaMs(skill.sla) * random.between(0.15, 0.9)
    const start = plan.registeredAt + HOUR
    if (plan.end - took <= start) continue
    const createdAt = random.between(start, plan.end - took)
    const task = paidTask(plan, skill, Math.round(createdAt), derived(`tx/${name}/${n}`))
    const resultUrl = `https://results.example/${name}/${derived(`result/${name}/${n}`).slice(2, 14)}`
    line.add(createdAt, async () => {
      const stored = await store.insertTask(task, [
        feedEvents.taskCreated(task),
        feedEvents.taskPaid(task, task.payment?.txHash ?? null, task.createdAt),
      ])
      if (stored.outcome !== 'inserted')
        throw new Error(`demo: task of ${name} not stored (${stored.outcome})`)
    })
    line.add(createdAt + took, async () => {
      const at = new Date(Math.round(createdAt + took))
      if (!(await store.changeTask(jobSteps.delivery(task, resultUrl, at))))
        throw new Error(`demo: task of ${name} not completed`)
      tally.completedTasks += 1
    })
  }
}

/** The demo buyer wallet that paid the transaction `txHash`. */
const buyerOf = (txHash: `0x${string}`): Address | null =>
  DEMO_BUYERS[Number(BigInt(txHash) % BigInt(DEMO_BUYERS.length))] ?? null

/** A paid order of `skill`, paid with the order by a transfer of exactly its price. */
function paidTask(plan: AgentPlan, skill: SkillSeed, createdAt: number, txHash: `0x${string}`): TaskRecord {
  const price = BigInt(Math.round(skill.price * 1_000_000))
  const at = new Date(createdAt)
  return {
    id: generateId(cryptoRandom(), 'task_'),
    agentName: plan.seed.name,
    skillName: skill.name,
    skillSlug: skill.slug ?? slugify(skill.name),
    sla: skill.sla,
    status: 'paid',
    priceBaseUnits: price,
    payTo: plan.wallet,
    params: null,
    buyer: 'demo-buyer',
    buyerEmail: null,
    buyerWallet: null,
    payment: {
      method: 'transfer',
      txHash,
      escrowTaskId: null,
      amountBaseUnits: price,
      from: buyerOf(txHash),
      at,
    },
    pendingCheck: null,
    resultUrl: null,
    idempotency: null,
    clientKey: '',
    expiresAt: null,
    createdAt: at,
    completedAt: null,
    slaSeconds: null,
    reviewSeconds: 0,
    reveal: 'on_delivery',
    deliveredAt: null,
    outcome: null,
    entries: [],
    jobId: null,
    rating: null,
  }
}

/** Free orders placed by other agents through the public actions, and delivered by the seller. */
function planFreeTasks(
  market: MarketplaceActions,
  line: Timeline,
  random: Prng,
  plan: AgentPlan,
  buyers: string[],
  tally: Tally,
) {
  if (plan.liveness === 'never' || plan.free.length === 0) return
  const name = plan.seed.name
  for (let n = random.int(0, 3); n > 0; n--) {
    const took = random.between(5, 600) * 1000
    const createdAt = random.between(plan.registeredAt + HOUR, plan.end - took)
    const order = {
      skill: slugify(random.pick(plan.free)),
      buyer: random.pick(buyers.filter((b) => b !== name)),
    }
    const resultUrl = `https://results.example/${name}/free-${n}`
    let taskId = ''
    line.add(createdAt, async () => {
      taskId = ((await market.createTask(name, order)).body as TaskView).task_id
    })
    line.add(createdAt + took, async () => {
      await market.completeTask(name, taskId, keyOf(tally, name).apiKey, { result_url: resultUrl })
      tally.completedTasks += 1
    })
  }
}

/** A few recent orders of paid skills still awaiting payment, through the public action. */
function planPendingOrders(
  market: MarketplaceActions,
  line: Timeline,
  random: Prng,
  plans: AgentPlan[],
  now: number,
) {
  const sellers = plans.filter((plan) => plan.forSale.length > 0 && plan.liveness !== 'never')
  const buyers = plans.map((plan) => plan.seed.name)
  for (const plan of random.shuffle(sellers).slice(0, PENDING_ORDERS)) {
    const name = plan.seed.name
    const skill = random.pick(plan.forSale)
    const order = {
      skill: skill.slug ?? slugify(skill.name),
      buyer: random.pick(buyers.filter((b) => b !== name)),
    }
    line.add(now - random.between(2, 90) * MINUTE, () => market.createTask(name, order))
  }
}

/**
 * Fills an empty marketplace with a believable, reproducible demo market: 36 agents, 70 purchasable skills, owners,
 * milestones, heartbeats spread over the liveness windows (relative to `options.now`) and completed tasks.
 * Throws DemoRefusedError when the store already has agents. Leaves `options.clock` at `options.now`.
 * @example const summary = await seedDemo(market, store, { now: new Date(), baseUrl, clock })
 */
export async function seedDemo(
  market: MarketplaceActions,
  store: Store,
  options: { now: Date; baseUrl: string; clock: DemoClock },
): Promise<DemoSummary> {
  if ((await store.listAgents({ limit: 1, offset: 0 })).total > 0)
    throw new DemoRefusedError('the database already has agents; use a new DATABASE_URL')
  const now = options.now.getTime()
  const random = seededRandom(DEMO_SEED)
  const line = timeline()
  const tally: Tally = { keys: new Map(), milestones: 0, verifiedMilestones: 0, completedTasks: 0 }
  const plans = planAgents(random, now)
  const buyers = plans.map((plan) => plan.seed.name)
  const firstPairing = new Map<UserSeed, number>()
  for (const plan of plans) {
    const claim = planProfile(market, line, random, plan, tally, options.baseUrl)
    if (claim) firstPairing.set(claim.owner, Math.min(firstPairing.get(claim.owner) ?? claim.at, claim.at))
    planMilestones(market, line, random, plan, tally)
    planPaidTasks(store, line, random, plan, tally)
    planFreeTasks(market, line, random, plan, buyers, tally)
  }
  planProfiles(market, line, random, firstPairing, options.baseUrl)
  planPendingOrders(market, line, random, plans, now)
  await line.play(options.clock)
  options.clock.set(options.now)
  return summarize(market, options.baseUrl, tally)
}

/** Counts read back through the public actions, and the three most trusted agents to open first. */
async function summarize(market: MarketplaceActions, baseUrl: string, tally: Tally): Promise<DemoSummary> {
  const { agents } = await market.listAgents({ limit: 100 })
  const count = (status: string) => agents.filter((agent) => agent.heartbeat.status === status).length
  const purchasableSkills = agents.reduce((sum, agent) => sum + agent.purchasableCount, 0)
  const visit = [...agents]
    .sort((a, b) => b.trustScore - a.trustScore || a.name.localeCompare(b.name))
    .slice(0, 3)
    .map((agent) => ({ name: agent.name, url: agentLinks(baseUrl, agent.name).pageUrl }))
  return {
    agents: agents.length,
    users: (await market.listUsers({ limit: 1 })).total,
    purchasableSkills,
    freeSkills: agents.reduce((sum, agent) => sum + agent.skillCount, 0) - purchasableSkills,
    milestones: tally.milestones,
    verifiedMilestones: tally.verifiedMilestones,
    completedTasks: tally.completedTasks,
    live: count('live'),
    idle: count('idle'),
    off: count('off'),
    visit,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// `bun run demo`
// ---------------------------------------------------------------------------------------------------------------

/**
 * `agentmarket demo`: seeds the configured database and prints what to do next, `serve` being the command that starts
 * the server on that database. Resolves to the exit code: 1, after one line on stderr, when it already has agents.
 * @example process.exitCode = await runDemo(readSettings(process.env), serveCommand(process.env))
 */
export async function runDemo(settings: Settings, serve: string): Promise<number> {
  const started = performance.now()
  const database = await openMarketDatabase(settings)
  const { store } = database
  const now = new Date()
  const clock = manualClock(now)
  const config = marketConfig(settings)
  const market = Marketplace.create({ store, config, clock })
  try {
    const s = await seedDemo(market, store, { now, baseUrl: settings.baseUrl, clock })
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    console.log(`agentmarket demo: seeded ${printableDatabaseUrl(settings.databaseUrl)} in ${seconds} s`)
    console.log(`  ${s.agents} agents (${s.live} live, ${s.idle} idle, ${s.off} off), ${s.users} owners`)
    console.log(`  ${s.purchasableSkills} purchasable skills, ${s.freeSkills} free skills`)
    console.log(
      `  ${s.milestones} milestones (${s.verifiedMilestones} verified), ${s.completedTasks} completed tasks`,
    )
    console.log(`Next, start the server on it:\n  ${serve}\nthen open ${settings.baseUrl}/ or an agent:`)
    for (const agent of s.visit) console.log(`  ${agent.url}`)
    console.log('Liveness is relative to now: agents drift to idle and off as real time passes.')
    return 0
  } catch (error) {
    if (!(error instanceof DemoRefusedError)) throw error
    console.error(`agentmarket: ${error.message}`)
    return 1
  } finally {
    await store.close()
  }
}
