import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { startMarketServer } from './support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-crash-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
const CYCLES = 3

/** POSTs JSON; the name of what was written when the server acknowledged it, else null. */
async function write(url: string, body: unknown, key?: string): Promise<boolean> {
  const headers: Record<string, string> = { 'content-type': 'application/json', connection: 'close' }
  if (key) headers.authorization = `Bearer ${key}`
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(body) }).then(
    (response) => response.status < 300,
    () => false,
  )
}

describe('bun start killed with SIGKILL under load', () => {
  test('behavior: every acknowledged write survives, and no write is half there, over several crash cycles', async () => {
    const databaseUrl = `file:${join(folder, 'market.db')}`
    const acknowledgedAgents: string[] = []
    const acknowledgedMilestones: string[] = []
    let sent = 0
    let key = ''
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const server = await startMarketServer({
        DATABASE_URL: databaseUrl,
        CHAIN_RPC_URL: 'http://127.0.0.1:9',
      })
      if (cycle === 0) {
        const answer = await fetch(`${server.base}/api/agents/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'survivor' }),
        })
        key = ((await answer.json()) as { apiKey: string }).apiKey
      }
      // Writes keep coming in waves; the kill lands once this cycle has 60 acknowledged, with more in flight.
      const pending: Promise<void>[] = []
      const ackedBefore = acknowledgedAgents.length
      let killed = false
      for (let index = 0; !killed || index % 40 !== 0; index++) {
        const name = `crash-${cycle}-${index}`
        const title = `milestone ${cycle}-${index}`
        sent += 2
        pending.push(
          write(`${server.base}/api/agents/register`, { name, skills: ['ping', 'pong'] }).then((ok) => {
            if (ok) acknowledgedAgents.push(name)
          }),
          write(`${server.base}/api/agents/survivor/milestones`, { date: '2026-01-01', title }, key).then(
            (ok) => {
              if (ok) acknowledgedMilestones.push(title)
            },
          ),
        )
        if (index % 20 === 19) await Bun.sleep(5)
        if (!killed && acknowledgedAgents.length - ackedBefore >= 60) {
          server.process.kill('SIGKILL')
          killed = true
        }
        if (index > 5_000) throw new Error('the server acknowledged too few writes to be killed mid-load')
      }
      await Promise.all(pending)
      await server.process.exited
    }
    expect(acknowledgedAgents.length).toBeGreaterThanOrEqual(CYCLES * 60)
    // The kills landed mid-load: writes were still being sent and answered when the server died.
    expect(acknowledgedAgents.length + acknowledgedMilestones.length).toBeLessThan(sent)
    console.log({ sent, agents: acknowledgedAgents.length, milestones: acknowledgedMilestones.length })

    const database = createClient({ url: databaseUrl })
    const agents = await database.execute("select name_key from agents where name_key like 'crash-%'")
    const stored = new Set(agents.rows.map((row) => String(row[0])))
    expect(acknowledgedAgents.filter((name) => !stored.has(name))).toEqual([])
    // A registration is one transaction: an agent is never there without both its skills and its feed event.
    const halfAgents =
      await database.execute(`select a.name_key from agents a where a.name_key like 'crash-%' and (
        (select count(*) from skills s where s.agent_key = a.name_key) != 2
        or not exists (select 1 from events e where e.agent = a.name and e.kind = 'agent.registered'))`)
    expect(halfAgents.rows).toEqual([])
    const milestones = await database.execute("select title from milestones where agent_key = 'survivor'")
    const titles = new Set(milestones.rows.map((row) => String(row[0])))
    expect(acknowledgedMilestones.filter((title) => !titles.has(title))).toEqual([])
    // The agent's milestone counters move in the same transaction as the milestones they count.
    const [counts] = (
      await database.execute(
        "select claimed_milestones, (select count(*) from milestones where agent_key = 'survivor') from agents where name_key = 'survivor'",
      )
    ).rows
    expect(Number(counts?.[0])).toBe(Number(counts?.[1]))
    database.close()
  })
})
