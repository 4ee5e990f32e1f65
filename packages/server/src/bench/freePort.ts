/**
 * A TCP port that was free a moment ago. It is drawn below Linux's ephemeral range (32768-60999), where the kernel
 * never puts the source port of an outgoing connection: a port from `port: 0` can be taken by one of the many client
 * connections the tests open before a server gets to listen on it.
 */
export function freePort(): number {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    try {
      Bun.serve({ port, hostname: '127.0.0.1', fetch: () => new Response() }).stop(true)
      return port
    } catch {
      // taken: draw another
    }
  }
  throw new Error('no free port')
}
