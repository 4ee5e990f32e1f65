import { jsonObjectOf, jsonOfBytes, readLimited } from '@agentmarket/core/routes'

// The exact bytes of each body, for the requests that sign them (wallet proofs); gone with the request.
const bodies = new WeakMap<Request, Uint8Array>()

/** The exact body bytes the parser read for `request` (none: empty). */
export function rawBodyOf(request: Request): Uint8Array {
  return bodies.get(request) ?? new Uint8Array()
}

/**
 * The JSON body of `request` (undefined: none): over 64 KiB 413, not JSON 415, malformed 400, and anything but an
 * object 400 unless `anyValue` (JSON-RPC bodies may be arrays). Its bytes are kept for `rawBodyOf`. The route table's
 * writes call it from their handlers, so Elysia prepares no body of its own for them: its parser asks every request
 * for its body's stream first, which alone cost a POST about a tenth of its throughput (bench/CHANGES.md).
 */
export async function readJsonBody(request: Request, anyValue = false): Promise<unknown> {
  // Bun's HTTP server frames each request by its Content-Length, so such a body is read whole (see readLimited).
  const bytes = await readLimited(request, undefined, { framed: true })
  bodies.set(request, bytes)
  const data = jsonOfBytes(bytes, request)
  return anyValue ? data : jsonObjectOf(data)
}

/**
 * The `parse` hook of the routes Elysia reads a body for (A2A, MCP): `readJsonBody`'s answer, null for none (Elysia
 * falls back to its own parsers when a parse hook returns undefined).
 * @example app.post('/mcp', handler, { parse: parseJsonBody })
 */
export const parseJsonBody = async ({ request, path }: { request: Request; path: string }) =>
  (await readJsonBody(request, path === '/mcp')) ?? null
