import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  createFetchHandler,
  defaultConfig,
  MARKET_ROUTES,
  Marketplace,
  memoryStore,
  TEMPO_USDC_E,
} from '@agentmarket/core'
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createClient, http } from 'viem'
import { HOST_FACTS } from '../../../packages/server/src/routes/discovery.ts'
import { jsonCaller } from '../../support/examples.ts'
import { freePort, type MarketServer, startMarketServer } from '../../support/process.ts'
import {
  type Answer,
  type Driver,
  httpDriver,
  mcpDriver,
  type Operation,
  type ToolResult,
} from './drivers.ts'
import { ACCESS, type Outcome, outcomeOf, PENDING } from './matrix.ts'
import { BUILDERS, type CellRequest } from './operations.ts'
import { buildWorld, PRINCIPALS, type Principal, type World } from './world.ts'

// The access matrix (issue 37, mechanism 1): every operation of the route table, over every interface that offers it,
// asked by every principal, one real request per cell, against the expectation written in matrix.ts. The HTTP cells
// go to a `bun start` process (both mounts) and to createFetchHandler; the MCP cells to the same process through
// both eras' official clients. Each answer is also searched for what its principal must not see.

const MARKET = 'https://market.test'
const FETCH_BASE = 'https://fetch.test'
const MCP_REVISION = '2026-07-28'

/** Every operation: the server's own rows and the marketplace's, as the route table defines them. */
const OPERATIONS: readonly Operation[] = [...Object.values(HOST_FACTS), ...MARKET_ROUTES]
const hostOnly = new Set(Object.keys(HOST_FACTS))

/** The worlds the drivers ask: the real server's, and the fetch handler's (its own market). */
type Worlds = { server: World; fetch: World; base: string }

/** One interface: its name, which operations it offers, and its driver once the worlds exist. */
type Interface = {
  name: string
  kind: Driver['kind']
  offers(row: Operation): boolean
  world(worlds: Worlds): World
  connect(worlds: Worlds): Driver
}

/** A tool-calling function of one MCP era, with a client per API key (the key is the HTTP request's bearer). */
function mcpCaller(
  connect: (key: string | undefined) => Promise<{ callTool: Client['callTool']; close(): Promise<void> }>,
) {
  const clients = new Map<string, Promise<{ callTool: Client['callTool']; close(): Promise<void> }>>()
  const clientOf = (key: string | undefined) => {
    const existing = clients.get(key ?? '')
    if (existing) return existing
    const made = connect(key)
    clients.set(key ?? '', made)
    return made
  }
  return {
    call: async (key: string | undefined, name: string, args: Record<string, unknown>) =>
      (await (await clientOf(key)).callTool({ name, arguments: args })) as ToolResult,
    close: async () => {
      for (const client of clients.values()) await (await client).close()
    },
  }
}

const bearer = (key: string | undefined) =>
  key ? { requestInit: { headers: { authorization: `Bearer ${key}` } } } : {}

/** The session era's official client (@modelcontextprotocol/sdk). */
const legacyMcp = (base: string) =>
  mcpCaller(async (key) => {
    const client = new Client({ name: 'access-matrix', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), bearer(key)))
    return client
  })

/** The stateless revision's official client (@modelcontextprotocol/client), pinned to it. */
const modernMcp = (base: string) =>
  mcpCaller(async (key) => {
    const client = new ModernClient(
      { name: 'access-matrix', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: MCP_REVISION } } },
    )
    await client.connect(new ModernTransport(new URL(`${base}/mcp`), bearer(key)))
    return client as unknown as { callTool: Client['callTool']; close(): Promise<void> }
  })

/**
 * Every interface the matrix drives over the route table. A2A's methods are not route rows: their matrix is in
 * tests/security/a2aContexts.test.ts, over the A2A method table (packages/server/src/a2a/methods.ts), on both
 * bindings and both kinds of interface.
 */
const INTERFACES: Interface[] = [
  {
    name: 'HTTP /api (bun start)',
    kind: 'http',
    offers: () => true,
    world: (worlds) => worlds.server,
    connect: (worlds) => httpDriver('HTTP /api', worlds.server, worlds.server.call, '/api'),
  },
  {
    name: 'HTTP /api/v1 (bun start)',
    kind: 'http',
    offers: () => true,
    world: (worlds) => worlds.server,
    connect: (worlds) => httpDriver('HTTP /api/v1', worlds.server, worlds.server.call, '/api/v1'),
  },
  {
    name: 'createFetchHandler /api',
    kind: 'http',
    // The fetch handler serves the marketplace's rows; the index and health are the server's own.
    offers: (row) => !hostOnly.has(row.id),
    world: (worlds) => worlds.fetch,
    connect: (worlds) => httpDriver('fetch', worlds.fetch, worlds.fetch.call, '/api'),
  },
  {
    name: 'MCP session era (@modelcontextprotocol/sdk)',
    kind: 'mcp',
    offers: (row) => row.tool !== undefined,
    world: (worlds) => worlds.server,
    connect: (worlds) => {
      const mcp = legacyMcp(worlds.base)
      return mcpDriver('MCP session era', mcp.call, mcp.close)
    },
  },
  {
    name: `MCP ${MCP_REVISION} (@modelcontextprotocol/client)`,
    kind: 'mcp',
    offers: (row) => row.tool !== undefined,
    world: (worlds) => worlds.server,
    connect: (worlds) => {
      const mcp = modernMcp(worlds.base)
      return mcpDriver('MCP modern era', mcp.call, mcp.close)
    },
  },
]

let server: MarketServer | undefined
let worlds: Worlds | undefined
const drivers = new Map<string, Driver>()

beforeAll(async () => {
  // The payment chain is a closed port: payment checks fail fast (503) instead of reaching a public node.
  server = await startMarketServer({
    DATABASE_URL: ':memory:',
    BASE_URL: MARKET,
    CHAIN_RPC_URL: `http://127.0.0.1:${freePort()}`,
  })
  // Machine payments on, as the server has them: a request without a credential is offered the 402 challenge (the
  // MPP network is never reached).
  const mpp = {
    secretKey: `access-matrix-${crypto.randomUUID()}`,
    realm: 'fetch.test',
    currency: TEMPO_USDC_E,
    // The MPP network: a closed port (a challenge needs no call of it).
    getClient: () => createClient({ transport: http(`http://127.0.0.1:${freePort()}`) }),
  }
  const handler = createFetchHandler(
    Marketplace.create({ store: memoryStore(), config: defaultConfig(FETCH_BASE), mpp }),
  )
  const fetchCall = jsonCaller(FETCH_BASE, (request) => handler.fetch(request))
  worlds = {
    server: await buildWorld(jsonCaller(server.base), MARKET),
    fetch: await buildWorld(fetchCall, FETCH_BASE),
    base: server.base,
  }
  for (const face of INTERFACES) drivers.set(face.name, face.connect(worlds))
}, 300_000)

afterAll(async () => {
  for (const driver of drivers.values()) await driver.close?.()
  server?.stop()
})

/** The answer has the cell's outcome: allowed or refused, its status (HTTP) and its problem code. */
function expectOutcome(answer: Answer, expected: Outcome, label: string) {
  const got = { allowed: answer.allowed, status: answer.status, code: answer.code }
  const want = {
    allowed: expected.allowed,
    // A tool's success carries no HTTP status.
    status: answer.status === null && expected.allowed ? null : expected.status,
    code: expected.allowed ? null : (expected.code ?? answer.code),
  }
  expect(got, `${label}: ${answer.text.slice(0, 300)}`).toEqual(want)
}

/** The operations whose answers issue a secret of each shape (and so may hold one). */
const ISSUERS: { shape: RegExp; what: string; operations: readonly string[] }[] = [
  { shape: /amk_[0-9a-f]{64}/, what: 'an API key', operations: ['registerAgent', 'rotateApiKey'] },
  { shape: /whsec_[A-Za-z0-9+/=]+/, what: 'a webhook secret', operations: ['addWebhook', 'addTaskWebhook'] },
]
const TASK_ID = /task_[0-9a-f]{32}/g

/**
 * Nothing in the answer the principal must not see: no secret of the world it does not hold, no key or webhook secret
 * but where one is issued, and (but for the seller, who holds its orders' ids) no task id it did not present.
 */
function expectNoLeak(answer: Answer, world: World, who: Principal, row: Operation, request: CellRequest) {
  for (const secret of world.secrets)
    if (!secret.holders.includes(who))
      expect(answer.text.includes(secret.value), `${row.id} shows ${who} ${secret.label}`).toBe(false)
  for (const issuer of ISSUERS)
    if (!issuer.operations.includes(row.id))
      expect(issuer.shape.test(answer.text), `${row.id} shows ${who} ${issuer.what}`).toBe(false)
  if (who === 'seller' || row.id === 'createTask') return
  const presented = new Set([request.params?.id, world.principals[who].task])
  const shown = [...answer.text.matchAll(TASK_ID)].map(([id]) => id).filter((id) => !presented.has(id))
  expect(shown, `${row.id} shows ${who} task ids it did not hold`).toEqual([])
}

/** What an allowed read must (not) show, beyond the secrets: read from the answer's JSON. */
// biome-ignore lint/suspicious/noExplicitAny: answers of many shapes, checked field by field
const READ_CHECKS: Record<string, (json: any, world: World, request: CellRequest) => void> = {
  listTasks: (json, world) => {
    // The seller's queue (and the public history) hold the seller's tasks only.
    for (const task of json.tasks) if ('agent' in task) expect(task.agent).toBe(world.seller.name)
  },
  getTask: (json, _world, request) => expect(json.task_id).toBe(request.params?.id),
  listWebhooks: (json) => {
    // The seller's endpoints only: never a buyer's task endpoint, never a secret again.
    for (const hook of json.webhooks) {
      expect(hook.task_id).toBeNull()
      expect(hook).not.toHaveProperty('secret')
    }
  },
  listTaskWebhooks: (json, _world, request) => {
    for (const hook of json.webhooks) {
      expect(hook.task_id).toBe(request.params?.id)
      expect(hook).not.toHaveProperty('secret')
    }
  },
}

describe('the access matrix covers every operation and principal', () => {
  test('behavior: every route row has a builder and a cell for every principal; the matrix names no other', () => {
    const ids = OPERATIONS.map((row) => row.id)
    const missing = ids.flatMap((id) =>
      PRINCIPALS.filter((who) => !ACCESS[id]?.[who]).map((who) => `${id} × ${who}`),
    )
    expect(missing, 'route rows without a matrix cell (add them to matrix.ts)').toEqual([])
    expect(
      Object.keys(ACCESS).filter((id) => !ids.includes(id)),
      'matrix rows of no operation',
    ).toEqual([])
    expect(
      ids.filter((id) => !BUILDERS[id]),
      'operations without a request builder',
    ).toEqual([])
    expect(
      Object.keys(BUILDERS).filter((id) => !ids.includes(id)),
      'builders of no operation',
    ).toEqual([])
    const stale = PENDING.filter((cell) => !ACCESS[cell.operation]?.[cell.principal])
    expect(stale, 'pending cells of no matrix cell').toEqual([])
  })

  test('behavior: every MCP tool either era lists is a route row with a matrix row, and every row tool is listed', async () => {
    const base = worlds?.base ?? ''
    const rowTools = OPERATIONS.flatMap((row) => (row.tool ? [row.tool.name] : [])).sort()
    const legacy = new Client({ name: 'access-matrix', version: '1.0.0' })
    await legacy.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
    const modern = new ModernClient(
      { name: 'access-matrix', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: MCP_REVISION } } },
    )
    await modern.connect(new ModernTransport(new URL(`${base}/mcp`)))
    for (const client of [legacy, modern] as const) {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name).sort(), 'tools without a row (and so a matrix row)').toEqual(
        rowTools,
      )
      await client.close()
    }
  }, 300_000)
})

for (const face of INTERFACES)
  describe(`access over ${face.name}`, () => {
    for (const row of OPERATIONS) {
      if (!face.offers(row)) continue
      for (const who of PRINCIPALS) {
        const pending = PENDING.find(
          (cell) =>
            cell.operation === row.id && cell.principal === who && (cell.kind ?? face.kind) === face.kind,
        )
        const name = `${row.id} as ${who}${pending ? ` (pending: ${pending.why})` : ''}`
        const run = pending ? test.todo : test
        // A wide bound: the verdict is the cell's outcome, never the speed of a busy machine.
        run(
          name,
          async () => {
            const cell = ACCESS[row.id]?.[who]
            const builder = BUILDERS[row.id]
            const driver = drivers.get(face.name)
            if (!cell || !builder || !driver || !worlds)
              throw new Error(`no cell, builder or driver for ${name}`)
            const world = face.world(worlds)
            const request = await builder(world, who)
            try {
              const answer = await driver.send(row, request, { ...world.principals[who], ...request.as })
              expectOutcome(answer, outcomeOf(cell, driver.kind), `${face.name} ${name}`)
              expectNoLeak(answer, world, who, row, request)
              if (answer.allowed) READ_CHECKS[row.id]?.(JSON.parse(answer.text), world, request)
            } finally {
              await request.cleanup?.()
            }
          },
          120_000,
        )
      }
    }
  })
