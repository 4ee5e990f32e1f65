import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { startMarketServer } from './support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-shutdown-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('bun start on SIGTERM', () => {
  test('behavior: stops taking requests, answers those in flight, keeps every acknowledged write, exits 0', async () => {
    const databaseUrl = `file:${join(folder, 'market.db')}`
    const server = await startMarketServer({ DATABASE_URL: databaseUrl, CHAIN_RPC_URL: 'http://127.0.0.1:9' })
    const register = (index: number) =>
      fetch(`${server.base}/api/agents/register`, {
        method: 'POST',
        // A new connection each: a reused keep-alive connection closed by the stop would be a client-side race.
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ name: `leaving-${index}`, skills: ['ping'] }),
      }).then(
        (response) => (response.status === 200 ? `leaving-${index}` : `status ${response.status}`),
        // Refused: sent after the server stopped listening. Reset: the connection was still in the listen backlog
        // when the listener closed (never read, so nothing of it may be stored: checked below). Anything else fails.
        (error: { code?: string }) =>
          error.code === 'ECONNREFUSED'
            ? null
            : error.code === 'ECONNRESET'
              ? `reset leaving-${index}`
              : `failed ${error.code}`,
      )
    const sent: Promise<string | null>[] = []
    for (let index = 0; index < 200; index++) {
      sent.push(register(index))
      if (index % 20 === 0) await Bun.sleep(1)
    }
    // The stop comes once a write has been acknowledged (however slow the machine), with more requests still under way.
    await Promise.any(
      sent.map((answer) =>
        answer.then((name) =>
          name?.startsWith('leaving-') ? name : Promise.reject(new Error(String(name))),
        ),
      ),
    )
    server.process.kill('SIGTERM')
    // Requests keep coming until one is refused or cut off (the listener closed; once the process exits every one is),
    // however fast the machine stops it: a condition, not a count of requests.
    let refused = false
    for (let index = 200; !refused; index += 20) {
      const batch = Array.from({ length: 20 }, (_, offset) => register(index + offset))
      sent.push(...batch)
      refused = (await Promise.all(batch)).some((answer) => answer === null || answer?.startsWith('reset'))
    }
    const answers = await Promise.all(sent)
    expect(await server.process.exited).toBe(0)
    const acknowledged = answers.filter((answer): answer is string => answer?.startsWith('leaving-') ?? false)
    expect(answers.filter((answer) => answer?.startsWith('status') || answer?.startsWith('failed'))).toEqual(
      [],
    )
    expect(answers.filter((answer) => answer === null || answer?.startsWith('reset')).length).toBeGreaterThan(
      0,
    )
    expect(acknowledged.length).toBeGreaterThan(0)
    const database = createClient({ url: databaseUrl })
    const stored = await database.execute("select name from agents where name like 'leaving-%'")
    database.close()
    const names = new Set(stored.rows.map((row) => String(row[0])))
    expect(acknowledged.filter((name) => !names.has(name))).toEqual([])
    // A request cut off after its write would be stored without its answer: a reset must have written nothing.
    const reset = answers.flatMap((answer) => (answer?.startsWith('reset ') ? [answer.slice(6)] : []))
    expect(reset.filter((name) => names.has(name))).toEqual([])
  })
})
