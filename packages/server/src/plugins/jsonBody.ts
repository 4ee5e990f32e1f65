import { jsonObjectOf, jsonOfBytes, readLimited } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'

// The exact bytes of each body, for the requests that sign them (wallet proofs); gone with the request.
const bodies = new WeakMap<Request, Uint8Array>()

/** The exact body bytes the parser read for `request` (none: empty). */
export function rawBodyOf(request: Request): Uint8Array {
  return bodies.get(request) ?? new Uint8Array()
}

/** Installs the JSON body parser for every route registered after it. */
export const jsonBody = new Elysia({ name: 'json-body' }).onParse(
  { as: 'global' },
  async ({ request, path }) => {
    // Bun's HTTP server frames each request by its Content-Length, so such a body is read whole (see readLimited).
    const bytes = await readLimited(request, undefined, { framed: true })
    bodies.set(request, bytes)
    const data = jsonOfBytes(bytes, request)
    // MCP speaks JSON-RPC, whose bodies may be arrays; every other endpoint takes a JSON object.
    const parsed = path === '/mcp' ? data : jsonObjectOf(data)
    // Elysia falls back to its own parsers when a parse hook returns undefined; null means "no body".
    return parsed ?? null
  },
)
