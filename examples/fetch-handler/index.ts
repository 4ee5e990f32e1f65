import { createFetchHandler, defaultConfig, Marketplace, memoryStore } from '@agentmarket/core'

/** Where a host may name the public address: a Workers binding, or the process environment elsewhere. */
type Env = { BASE_URL?: string }

let handler: ReturnType<typeof createFetchHandler> | undefined

/** The public address from configuration; never from a request, whose Host header anyone can write. */
function baseUrlOf(env: Env | undefined): string {
  const configured = env?.BASE_URL ?? globalThis.process?.env?.BASE_URL
  return configured && URL.canParse(configured) ? configured : 'http://localhost:3000'
}

/** The marketplace on an in-memory store, as a `{ fetch }` module for Workers, Deno Deploy and Bun.serve. */
export default {
  fetch(request: Request, env?: Env): Promise<Response> {
    // Workers hand their bindings to fetch, not to module scope, so the marketplace is made on the first request.
    handler ??= createFetchHandler(
      Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrlOf(env)) }),
    )
    return handler.fetch(request)
  },
}
