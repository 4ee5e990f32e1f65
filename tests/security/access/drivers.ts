import type { RouteRow } from '@agentmarket/core/routes'
import type { CellRequest } from './operations.ts'
import type { Caller, Credentials, World } from './world.ts'

// An interface driver sends one cell's request over its interface with the principal's credentials, and reads the
// answer the same way for every interface: allowed or refused, with the status and problem code. A new interface
// over the route table plugs in as one more driver: its operations, how it names each, and its send. (A2A's methods
// have their own table and matrix: packages/server/src/a2a/methods.ts, tests/security/a2aContexts.test.ts.)

/** An operation as the matrix reads it: a route row's facts (the server's own rows have no core call). */
export type Operation = Omit<RouteRow, 'call'>

/** What a cell got: allowed (2xx/3xx) or refused, its status and problem code, and the answer's text. */
export type Answer = { allowed: boolean; status: number | null; code: string | null; text: string }

/** One interface the matrix asks: the operations it offers and how it sends one of them. */
export type Driver = {
  name: string
  /** Which column set of an ACCESS cell applies (an MCP tool carries no wallet proof header). */
  kind: 'http' | 'mcp'
  /** Whether this interface offers the operation of `row`. */
  offers(row: Operation): boolean
  send(row: Operation, request: CellRequest, credentials: Credentials): Promise<Answer>
  close?(): Promise<void>
}

/** The path of `row` with its parameters filled in, under `prefix`. */
export function pathOf(row: Operation, params: Record<string, string> = {}, prefix = '/api') {
  return `${prefix}${row.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''))}`
}

/**
 * An HTTP driver over a caller (`bun start` or a fetch handler): the key as `Authorization: Bearer`, the wallet proof
 * of exactly this request (method, path, body bytes) with `X-Wallet-Address`, under the mount `prefix`.
 */
export function httpDriver(
  name: string,
  world: World,
  call: Caller,
  prefix: string,
  offers: (row: Operation) => boolean = () => true,
): Driver {
  return {
    name,
    kind: 'http',
    offers,
    async send(row, request, credentials) {
      const path = pathOf(row, request.params, prefix)
      const raw = request.body === undefined ? undefined : JSON.stringify(request.body)
      const proof = credentials.proof
        ? {
            ...(await world.proofHeaders(credentials.wallet, credentials.proof, row.method, path, raw ?? '')),
            'x-wallet-address': credentials.wallet.address,
          }
        : {}
      const query = request.query ? `?${new URLSearchParams(request.query)}` : ''
      const answer = await call(row.method, `${path}${query}`, {
        ...(raw === undefined ? {} : { raw }),
        ...(credentials.key ? { key: credentials.key } : {}),
        headers: proof,
      })
      const refused = answer.status >= 400
      return {
        allowed: !refused,
        status: answer.status,
        code: refused ? (answer.json?.code ?? null) : null,
        text: JSON.stringify(answer.json),
      }
    },
  }
}

/** The arguments of a row's MCP tool for a cell: its path parameters by the tool's names, then the body or query. */
export function toolArguments(row: Operation, request: CellRequest): Record<string, unknown> {
  const tool = row.tool
  if (!tool) throw new Error(`${row.id} has no tool`)
  const args: Record<string, unknown> = {}
  for (const [param, argument] of Object.entries(tool.params)) args[argument.name] = request.params?.[param]
  return { ...args, ...(request.body ?? request.query ?? {}) }
}

/** A tool call's result as the MCP SDKs answer it. */
export type ToolResult = { isError?: boolean; content?: unknown }

/**
 * An MCP driver: `callTool` is a client of one era connected with the principal's key (MCP carries the key as the
 * HTTP request's bearer; wallet proofs have no place in a tool call).
 */
export function mcpDriver(
  name: string,
  callTool: (key: string | undefined, tool: string, args: Record<string, unknown>) => Promise<ToolResult>,
  close?: () => Promise<void>,
): Driver {
  return {
    name,
    kind: 'mcp',
    offers: (row) => row.tool !== undefined,
    async send(row, request, credentials) {
      const result = await callTool(credentials.key, row.tool?.name ?? '', toolArguments(row, request))
      const text = (result.content as { type: string; text?: string }[] | undefined)?.[0]?.text ?? ''
      if (!result.isError) return { allowed: true, status: null, code: null, text }
      const problem = JSON.parse(text) as { status?: number; code?: string }
      return { allowed: false, status: problem.status ?? null, code: problem.code ?? null, text }
    },
    ...(close ? { close } : {}),
  }
}
