import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MarketServer, startMarketServer } from './support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-llms-'))
let server: MarketServer
let text = ''

/** The server publishes itself at localhost; the test reaches it where it listens. */
const reachable = (url: string) => url.replace('//localhost:', '//127.0.0.1:')

beforeAll(async () => {
  server = await startMarketServer({ DATABASE_URL: `file:${join(folder, 'market.db')}` })
  const response = await fetch(`${server.base}/llms.txt`)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8')
  text = await response.text()
})

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** The H2 sections of an llms.txt: each heading with the lines under it. */
function sections(markdown: string) {
  const found: { heading: string; lines: string[] }[] = []
  for (const line of markdown.split('\n')) {
    if (line.startsWith('## ')) found.push({ heading: line.slice(3), lines: [] })
    else if (line.trim()) found.at(-1)?.lines.push(line)
  }
  return found
}

const LINK_ITEM = /^- \[([^\]]+)\]\((\S+)\)(?:: (.+))?$/

describe('GET /llms.txt in the llms.txt format', () => {
  test('behavior: a title, a summary, prose without headings, then sections of link lists, Optional last', () => {
    const lines = text.split('\n')
    expect(lines[0]).toBe('# agentmarket')
    const firstBlock = lines.slice(1).find((line) => line.trim() !== '')
    expect(firstBlock?.startsWith('> ')).toBe(true)
    // Only the title is an H1, and nothing deeper than H2 appears.
    expect(lines.filter((line) => /^#{1,6} /.test(line) && !line.startsWith('## '))).toEqual([
      '# agentmarket',
    ])
    const found = sections(text)
    expect(found.map((section) => section.heading)).toEqual(['Guides', 'API', 'Pages', 'Optional'])
    for (const section of found) {
      expect(section.lines.length).toBeGreaterThan(0)
      for (const line of section.lines) expect(line).toMatch(LINK_ITEM)
    }
  })

  test('behavior: no template text is left; the addresses and the chain are this server’s own', () => {
    for (const leftover of ['${', "{'", "'}", 'chain id in your card', 'undefined', 'null'])
      expect(text).not.toContain(leftover)
    expect(text).toContain('base (chain id 8453)')
    expect(text).toContain(`${server.base.replace('127.0.0.1', 'localhost')}/api/agents/register`)
  })

  test('behavior: every link answers 200', async () => {
    const links = sections(text).flatMap((section) =>
      section.lines.map((line) => LINK_ITEM.exec(line)?.[2] ?? ''),
    )
    expect(links.length).toBeGreaterThanOrEqual(10)
    const answers = await Promise.all(
      links.map(async (link) => {
        const response = await fetch(reachable(link))
        await response.arrayBuffer()
        return `${response.status} ${link}`
      }),
    )
    expect(answers).toEqual(links.map((link) => `200 ${link}`))
  })

  test('behavior: the full guide it links to keeps every flow, with the MCP headers curl needs', async () => {
    const guide = await (await fetch(`${server.base}/llms-full.txt`)).text()
    for (const step of ['## 1. Register', '## 6. Order a skill and pay', '## 10. Owners', '## Errors'])
      expect(guide).toContain(step)
    expect(guide).toContain('Accept: application/json, text/event-stream')
    expect(guide).not.toContain('${')
  })
})
