import { afterAll, describe, expect, test } from 'bun:test'
import {
  type AgentView,
  defaultConfig,
  Marketplace,
  manualClock,
  type PublicTaskRow,
  type Store,
} from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { DemoRefusedError, seedDemo } from './demo.ts'

const NOW = new Date('2026-03-01T12:00:00Z')
const BASE_URL = 'http://localhost:3000'
const stores: Store[] = []
afterAll(() => Promise.all(stores.map((store) => store.close())))

/** A fresh in-memory database with the demo in it, read through a market whose clock stands at the seed time. */
async function seeded() {
  const store = libsqlStore(await openDatabase(':memory:'))
  stores.push(store)
  const clock = manualClock(NOW)
  const market = Marketplace.create({ store, config: defaultConfig(BASE_URL), clock })
  const summary = await seedDemo(market, store, { now: NOW, baseUrl: BASE_URL, clock })
  const { agents } = await market.listAgents({ limit: 100 })
  const views = await Promise.all(agents.map((agent) => market.getAgent(agent.name)))
  const history = async (name: string) =>
    (await market.listTasks(name, undefined, { status: 'completed', limit: 100 })) as {
      tasks: PublicTaskRow[]
      total: number
    }
  return { store, market, summary, views, history }
}

const demo = await seeded()
const purchasable = (views: AgentView[]) =>
  views.flatMap((agent) => agent.skills.filter((skill) => skill.type === 'purchasable'))

describe('seedDemo', () => {
  test('behavior: a few dozen agents on both platforms, exactly 70 purchasable skills with price, SLA and slug, plus free skills', () => {
    expect(demo.views.length).toBeGreaterThanOrEqual(30)
    expect(demo.views.length).toBeLessThanOrEqual(40)
    expect(new Set(demo.views.map((agent) => agent.platform))).toEqual(new Set(['primaryplatform', 'other']))
    const paid = purchasable(demo.views)
    expect(paid).toHaveLength(70)
    for (const skill of paid) {
      expect(skill.price).toBeGreaterThan(0)
      expect(Math.round((skill.price ?? 0) * 1e6) / 1e6).toBe(skill.price ?? 0)
      expect(skill.sla).toMatch(/^\d+ (second|minute|hour|day)s?$/)
      expect(skill.slug).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/)
      expect(skill.description).toBeTruthy()
    }
    const free = demo.views.flatMap((agent) => agent.skills.filter((skill) => skill.type === 'free'))
    expect(free.length).toBeGreaterThan(0)
    expect(free.every((skill) => skill.price === null)).toBe(true)
    // Every seller of a paid skill can be paid.
    for (const agent of demo.views.filter((view) => purchasable([view]).length > 0))
      expect(agent.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/)
  })

  test('behavior: heartbeats spread over the windows: some live, some idle, some off, a few never seen', () => {
    const status = (wanted: string) => demo.views.filter((agent) => agent.heartbeat.status === wanted)
    expect(status('live').length).toBeGreaterThan(0)
    expect(status('idle').length).toBeGreaterThan(0)
    expect(status('off').length).toBeGreaterThan(0)
    expect(status('off').some((agent) => agent.heartbeat.lastSeen === null)).toBe(true)
    for (const agent of demo.views) {
      if (agent.heartbeat.lastSeen)
        expect(Date.parse(agent.heartbeat.lastSeen)).toBeLessThanOrEqual(NOW.getTime())
      expect(Date.parse(agent.createdAt)).toBeLessThan(NOW.getTime())
    }
  })

  test('behavior: milestones both verified (with a proof URL) and claimed (without)', () => {
    const milestones = demo.views.flatMap((agent) => agent.milestones)
    const verified = milestones.filter((milestone) => milestone.trust === 'verified')
    const claimed = milestones.filter((milestone) => milestone.trust === 'claimed')
    expect(verified.length).toBeGreaterThan(0)
    expect(claimed.length).toBeGreaterThan(0)
    for (const milestone of verified) expect(milestone.proof).toMatch(/^https:\/\//)
    for (const milestone of claimed) expect(milestone.proof).toBeNull()
    expect(milestones).toHaveLength(demo.summary.milestones)
    expect(verified).toHaveLength(demo.summary.verifiedMilestones)
  })

  test('behavior: owners paired agents and filled in a profile', async () => {
    const owned = demo.views.filter((agent) => agent.owner)
    expect(owned.length).toBeGreaterThan(0)
    const usernames = [...new Set(owned.map((agent) => agent.owner?.username ?? ''))]
    expect(usernames).toHaveLength(demo.summary.users)
    for (const username of usernames) {
      const user = await demo.market.getUser(username)
      expect(user.agents.length).toBeGreaterThan(0)
      expect(user.agents.every((agent) => agent.owner?.username === username)).toBe(true)
      expect(user.bio).toBeTruthy()
    }
  })

  test('behavior: completed tasks, paid and free, show in public histories', async () => {
    let completed = 0
    const amounts: number[] = []
    for (const agent of demo.views) {
      const { tasks, total } = await demo.history(agent.name)
      expect(tasks).toHaveLength(total)
      completed += total
      for (const task of tasks) {
        expect(task.status).toBe('completed')
        expect(Date.parse(task.completed_at ?? '')).toBeLessThanOrEqual(NOW.getTime())
        amounts.push(task.amount)
      }
    }
    expect(completed).toBe(demo.summary.completedTasks)
    expect(amounts.some((amount) => amount > 0)).toBe(true)
    expect(amounts.some((amount) => amount === 0)).toBe(true)
  })

  test('behavior: the summary counts what was seeded and names agents to visit', () => {
    const { summary, views } = demo
    expect(summary.agents).toBe(views.length)
    expect(summary.purchasableSkills).toBe(70)
    expect(summary.freeSkills).toBeGreaterThan(0)
    expect(summary.live + summary.idle + summary.off).toBe(views.length)
    expect(summary.visit.length).toBeGreaterThan(0)
    for (const { name, url } of summary.visit) expect(url).toBe(`${BASE_URL}/agents/${name}`)
  })

  test('behavior: deterministic: two seeds give the same agents, skills, liveness, milestones and histories', async () => {
    const again = await seeded()
    const shape = async (run: typeof demo) =>
      Promise.all(
        run.views.map(async (agent) => ({
          name: agent.name,
          bio: agent.bio,
          platform: agent.platform,
          model: agent.model,
          skills: agent.skills,
          heartbeat: agent.heartbeat,
          owner: agent.owner,
          milestones: agent.milestones.map(({ id: _id, ...rest }) => rest),
          history: (await run.history(agent.name)).tasks,
        })),
      )
    expect(await shape(again)).toEqual(await shape(demo))
    expect(again.summary).toEqual(demo.summary)
  })

  test('error: refuses a database that already has agents', async () => {
    const clock = manualClock(NOW)
    const market = Marketplace.create({ store: demo.store, config: defaultConfig(BASE_URL), clock })
    await expect(seedDemo(market, demo.store, { now: NOW, baseUrl: BASE_URL, clock })).rejects.toThrow(
      DemoRefusedError,
    )
    expect((await demo.market.listAgents({ limit: 1 })).total).toBe(demo.summary.agents)
  })
})
