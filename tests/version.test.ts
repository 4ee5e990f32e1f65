import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import serverPackage from '../packages/server/package.json' with { type: 'json' }
import { type MarketServer, runToEnd, startMarketServer } from './support/process.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-version-'))
let server: MarketServer

beforeAll(async () => {
  server = await startMarketServer({ DATABASE_URL: `file:${join(folder, 'market.db')}` })
})

afterAll(() => {
  server?.stop()
  rmSync(folder, { recursive: true, force: true })
})

/** GETs a JSON document of the running server. */
// biome-ignore lint/suspicious/noExplicitAny: the test reads one field of each answer
const json = async (path: string): Promise<any> => (await fetch(`${server.base}${path}`)).json()

describe('one version everywhere', () => {
  test('behavior: --version, health, the API index, the OpenAPI document and the MCP server all say the server package version', async () => {
    const release = serverPackage.version
    const cli = await runToEnd(['bun', 'packages/server/src/main.ts', '--version'], {
      cwd: resolve(import.meta.dir, '..'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    })
    const mcp = new Client({ name: 'version-test', version: '0.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`)))
    const document = await json('/api/openapi.json')
    expect({
      cli: cli.stdout.trim(),
      health: (await json('/api/community/health')).version,
      index: (await json('/api/v1')).version,
      openapi: document.info['x-server-version'],
      mcp: mcp.getServerVersion()?.version,
    }).toEqual({ cli: release, health: release, index: release, openapi: release, mcp: release })
    await mcp.close()
    // The description's own version is a fact of SPEC.md and CONTRACT.md, not of a release (README: "Versions").
    expect(document.info.version).toBe('1.1.0')
  })
})
