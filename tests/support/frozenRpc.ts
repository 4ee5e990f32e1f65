import { createServer, type Socket } from 'node:net'

/** What a frozen RPC saw, in order: a connection opened, a request's first bytes, a connection closed by the client. */
export type FrozenRpcEvent = 'open' | 'request' | 'close'

/** A JSON-RPC endpoint that accepts connections and reads requests but never answers (a frozen node). */
export type FrozenRpc = {
  url: string
  /** Everything it saw, in order. */
  events: FrozenRpcEvent[]
  stop(): void
}

/** Starts a frozen RPC on 127.0.0.1: every connection is accepted and every request read, and none is answered. */
export async function frozenRpc(): Promise<FrozenRpc> {
  const events: FrozenRpcEvent[] = []
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    events.push('open')
    socket.on('data', (chunk) => {
      // A request starts with its method line; the rest of its bytes (headers, body) may come in later chunks.
      if (/^(POST|GET) /.test(chunk.toString('latin1', 0, 5))) events.push('request')
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      sockets.delete(socket)
      events.push('close')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    events,
    stop() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}
