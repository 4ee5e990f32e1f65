import { createFetchHandler, defaultConfig, Marketplace, memoryStore } from '@agentmarket/core'

let handler: ReturnType<typeof createFetchHandler> | undefined

/** The marketplace on an in-memory store, as a `{ fetch }` module for Workers, Deno Deploy and Bun.serve. */
export default {
  fetch(request: Request): Promise<Response> {
    // Workers hand no configuration to module scope, and the memory store lives only as long as this isolate, so
    // the origin it is first reached at is taken as its public address.
    if (!handler) {
      const baseUrl = new URL(request.url).origin
      handler = createFetchHandler(
        Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrl) }),
      )
    }
    return handler.fetch(request)
  },
}
