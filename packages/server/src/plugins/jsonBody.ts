import { readJson, readJsonObject } from '@agentmarket/core'
import { Elysia } from 'elysia'

/** Installs the JSON body parser for every route registered after it. */
export const jsonBody = new Elysia({ name: 'json-body' }).onParse(
  { as: 'global' },
  async ({ request, path }) => {
    // MCP speaks JSON-RPC, whose bodies may be arrays; every other endpoint takes a JSON object.
    const parsed = path === '/mcp' ? await readJson(request) : await readJsonObject(request)
    // Elysia falls back to its own parsers when a parse hook returns undefined; null means "no body".
    return parsed ?? null
  },
)
