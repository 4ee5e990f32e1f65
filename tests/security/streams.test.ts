import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startMarketServer } from '../support/process.ts'

// Attack: one client opens live feed streams until the server runs out of memory or sockets (1,204 streams from one
// address before this limit). Driven through bun start with rate limits on, as shipped.

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-streams-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** Opens a live stream; resolves once the server answered (a 200 kept open, or a refusal). */
async function openStream(base: string) {
  const controller = new AbortController()
  const answer = await fetch(`${base}/api/feed/live`, {
    headers: { accept: 'text/event-stream' },
    signal: controller.signal,
  })
  return { answer, close: () => controller.abort() }
}

describe('live feed streams are capped per client address and in all', () => {
  test('attack: past FEED_STREAMS_PER_CLIENT one address gets 429 too_many_streams; a closed stream frees its slot', async () => {
    const server = await startMarketServer({
      DATABASE_URL: `file:${join(folder, 'per-client.db')}`,
      RATE_LIMITS: 'on',
      FEED_STREAMS_PER_CLIENT: '3',
    })
    try {
      const open = [
        await openStream(server.base),
        await openStream(server.base),
        await openStream(server.base),
      ]
      for (const stream of open) expect(stream.answer.status).toBe(200)
      const refused = await openStream(server.base)
      expect(refused.answer.status).toBe(429)
      expect(refused.answer.headers.get('retry-after')).toBe('5')
      const problem = (await refused.answer.json()) as { code: string; detail: string }
      expect(problem.code).toBe('too_many_streams')
      expect(problem.detail).toContain('At most 3 live streams per client address')
      // Pages of the feed stay open to the same client.
      expect((await fetch(`${server.base}/api/feed/live`)).status).toBe(200)

      open[0]?.close()
      let again = await openStream(server.base)
      for (let tries = 0; again.answer.status === 429 && tries < 50; tries++) {
        await Bun.sleep(20)
        again = await openStream(server.base)
      }
      expect(again.answer.status).toBe(200)
      for (const stream of [...open, again]) stream.close()
    } finally {
      server.stop()
    }
  })

  test('attack: past FEED_STREAMS_MAX every client gets 429', async () => {
    const server = await startMarketServer({
      DATABASE_URL: `file:${join(folder, 'total.db')}`,
      FEED_STREAMS_PER_CLIENT: '100',
      FEED_STREAMS_MAX: '4',
    })
    try {
      const open = []
      for (let i = 0; i < 4; i++) open.push(await openStream(server.base))
      expect(open.map((stream) => stream.answer.status)).toEqual([200, 200, 200, 200])
      const refused = await openStream(server.base)
      expect(refused.answer.status).toBe(429)
      expect(((await refused.answer.json()) as { detail: string }).detail).toContain(
        'holds its 4 live streams',
      )
      for (const stream of open) stream.close()
    } finally {
      server.stop()
    }
  })
})
