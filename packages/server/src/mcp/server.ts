import { isUnexpected, MarketError, type MarketplaceActions, toProblem } from '@agentmarket/core'
import { bearerKey } from '@agentmarket/core/routes'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { createMcpHandler, isLegacyRequest, Server as ModernServer } from '@modelcontextprotocol/server'
import { fallbackLogger, type Logger } from '../log.ts'
import { jsonSchemaOf, skillInputSchema } from '../openapi/jsonSchema.ts'
import { requestIdOf } from '../plugins/requestLog.ts'
import { VERSION } from '../version.ts'
import type { Charge } from './http.ts'
import { marketTools, type Tool, type ToolContext } from './tools.ts'

const CARD_URI = /^agentmarket:\/\/agents\/([^/]+)\/card$/
const GUIDE_URI = 'agentmarket://guide/llms.txt'

/** A JSON Schema object made self-contained (skills inline, no OpenAPI component references). */
function selfContained(schema: object) {
  const text = JSON.stringify(schema).replaceAll(
    '{"$ref":"#/components/schemas/SkillInput"}',
    JSON.stringify(skillInputSchema()),
  )
  return { ...JSON.parse(text), type: 'object' as const }
}

/**
 * A tool failure as MCP reports it: isError, with the problem's code and detail as text (no structuredContent: that
 * is the shape of a success, which clients check against the tool's outputSchema); faults are logged with the
 * request id.
 */
function toolError(error: unknown, logger: Logger, context: ToolContext) {
  if (isUnexpected(error)) logger.error('mcp tool failed', { requestId: context.requestId }, error)
  const problem = toProblem(error, '/mcp', 'agentmarket')
  const { code, detail, status, errors, budget } = problem
  return {
    isError: true,
    content: [
      {
        type: 'text' as const,
        text: JSON.stringify({
          code,
          detail,
          status,
          ...(errors ? { errors } : {}),
          ...(budget ? { budget } : {}),
        }),
      },
    ],
  }
}

/** What tools/list answers: names, descriptions, effects, and self-contained input and output schemas. */
function toolListing(tools: Tool[]) {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: selfContained(jsonSchemaOf(tool.input)),
    outputSchema: selfContained(tool.outputSchema()),
    annotations: tool.annotations,
  }))
}

/** The tools, and what tools/list answers about them (converted once, on the first list, not at start-up). */
type Toolbox = { tools: Tool[]; listing: () => ReturnType<typeof toolListing> }

/** What a server answers to each MCP method it takes: the same for both eras of the protocol. */
function mcpMethods(
  market: MarketplaceActions,
  { tools, listing }: Toolbox,
  guide: string,
  context: ToolContext,
  logger: Logger,
) {
  return {
    listTools: async () => ({ tools: listing() }),
    async callTool(params: { name: string; arguments?: Record<string, unknown> | undefined }) {
      const tool = tools.find((candidate) => candidate.name === params.name)
      if (!tool)
        return toolError(
          new MarketError('unknown_tool', 404, 'Not found', `No tool is named "${params.name}".`),
          logger,
          context,
        )
      try {
        const result = await tool.run(params.arguments ?? {}, context)
        return {
          content: [{ type: 'text' as const, text: JSON.stringify(result) }],
          structuredContent: result,
        }
      } catch (error) {
        return toolError(error, logger, context)
      }
    },
    async listResources() {
      const { agents } = await market.listAgents({ limit: 100 })
      return {
        resources: [
          {
            uri: GUIDE_URI,
            name: 'llms.txt',
            description: 'The guide to every flow',
            mimeType: 'text/plain',
          },
          ...agents.map((agent) => ({
            uri: `agentmarket://agents/${agent.name}/card`,
            name: `${agent.name} card`,
            mimeType: 'application/json',
          })),
        ],
      }
    },
    listResourceTemplates: async () => ({
      resourceTemplates: [
        { uriTemplate: 'agentmarket://agents/{name}/card', name: 'Agent card', mimeType: 'application/json' },
      ],
    }),
    async readResource({ uri }: { uri: string }) {
      if (uri === GUIDE_URI) return { contents: [{ uri, mimeType: 'text/plain', text: guide }] }
      const card = CARD_URI.exec(uri)
      if (!card?.[1]) throw new Error(`Unknown resource ${uri}`)
      const body = await market.agentCard(decodeURIComponent(card[1]))
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(body) }] }
    },
  }
}

const SERVER_INFO = { name: 'agentmarket', version: VERSION }
const SERVER_OPTIONS = {
  capabilities: { tools: {}, resources: {} },
  instructions: 'The agentmarket API as tools; read the guide resource first.',
}

/** One stateless MCP server (the session era's SDK) for one HTTP request: the tools act with its bearer key. */
function mcpServer(methods: ReturnType<typeof mcpMethods>) {
  const server = new Server(SERVER_INFO, SERVER_OPTIONS)
  server.setRequestHandler(ListToolsRequestSchema, methods.listTools)
  server.setRequestHandler(CallToolRequestSchema, (request) => methods.callTool(request.params))
  server.setRequestHandler(ListResourcesRequestSchema, methods.listResources)
  server.setRequestHandler(ListResourceTemplatesRequestSchema, methods.listResourceTemplates)
  server.setRequestHandler(ReadResourceRequestSchema, (request) => methods.readResource(request.params))
  return server
}

/** The same server for the stateless revision (2026-07-28), on its SDK (@modelcontextprotocol/server 2). */
function modernServer(methods: ReturnType<typeof mcpMethods>) {
  const server = new ModernServer(SERVER_INFO, SERVER_OPTIONS)
  server.setRequestHandler('tools/list', methods.listTools)
  server.setRequestHandler('tools/call', (request) => methods.callTool(request.params))
  server.setRequestHandler('resources/list', methods.listResources)
  server.setRequestHandler('resources/templates/list', methods.listResourceTemplates)
  server.setRequestHandler('resources/read', (request) => methods.readResource(request.params))
  return server
}

/**
 * The MCP endpoint (Streamable HTTP, stateless, JSON answers) for POST /mcp: one server per request, acting with
 * that request's bearer key. The body arrives parsed by the app, held to its 64 KiB limit.
 * @example app.post('/mcp', ({ request, body }) => handle(request, body))
 */
export function mcpHandler(market: MarketplaceActions, guide: string, logger: Logger = fallbackLogger) {
  const tools = marketTools(market)
  let listing: ReturnType<typeof toolListing> | undefined
  const toolbox: Toolbox = { tools, listing: () => (listing ??= toolListing(tools)) }
  // Each request's tool context, for the modern handler's per-request factory (which is handed the request).
  const contexts = new WeakMap<Request, ToolContext>()
  const modern = createMcpHandler(
    ({ requestInfo }) => {
      // Every request is given its context before it is handed over; none found means no credentials at all.
      const context = (requestInfo && contexts.get(requestInfo)) ?? {
        apiKey: undefined,
        client: null,
        requestId: '',
      }
      return modernServer(mcpMethods(market, toolbox, guide, context, logger))
    },
    {
      legacy: 'reject',
      // A request the revision's rules refuse (a header mismatch, an unknown version) is the client's error.
      onerror: (error) => logger.info('mcp request refused', { reason: error.message }),
    },
  )
  return async (
    request: Request,
    parsedBody: unknown,
    client?: string,
    charge?: Charge,
  ): Promise<Response> => {
    const context: ToolContext = {
      apiKey: bearerKey(request.headers.get('authorization')),
      client: client ?? null,
      charge,
      requestId: requestIdOf(request),
    }
    // The stateless revision's requests carry its envelope (version and capabilities in _meta, Mcp-Method): they
    // go to its SDK; initialize-era requests to the session-era SDK, as before.
    if (!(await isLegacyRequest(request, parsedBody))) {
      contexts.set(request, context)
      return modern.fetch(request, { parsedBody })
    }
    const server = mcpServer(mcpMethods(market, toolbox, guide, context, logger))
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    })
    await server.connect(transport)
    try {
      return await transport.handleRequest(request, { parsedBody })
    } finally {
      await server.close()
    }
  }
}
