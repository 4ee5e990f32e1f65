/** JSON-RPC traffic counted so far: HTTP requests, the JSON-RPC calls in them, bytes sent and received. */
export type RpcTraffic = {
  httpRequests: number
  rpcCalls: number
  requestBytes: number
  responseBytes: number
}

/**
 * Counts every fetch of this process from now until `stop()`, which puts the real fetch back: each request, and
 * each call of a JSON-RPC batch body (any other body counts as one call). Bytes received are the Content-Length.
 * @example const counter = countRpcTraffic(); await work(); counter.stop(); console.log(counter.traffic.rpcCalls)
 */
export function countRpcTraffic(): { traffic: RpcTraffic; stop(): void } {
  const traffic: RpcTraffic = { httpRequests: 0, rpcCalls: 0, requestBytes: 0, responseBytes: 0 }
  const realFetch = globalThis.fetch
  globalThis.fetch = Object.assign(
    async (input: string | URL | Request, init?: RequestInit) => {
      const body = typeof init?.body === 'string' ? init.body : ''
      traffic.httpRequests++
      traffic.requestBytes += body.length
      const parsed: unknown = body ? JSON.parse(body) : []
      traffic.rpcCalls += Array.isArray(parsed) ? parsed.length : 1
      const response = await realFetch(input, init)
      traffic.responseBytes += Number(response.headers.get('content-length') ?? 0)
      return response
    },
    { preconnect: realFetch.preconnect },
  ) as typeof fetch
  return {
    traffic,
    stop: () => {
      globalThis.fetch = realFetch
    },
  }
}

/** The traffic between two readings of a counter: `after` minus `before`, field by field. */
export function trafficSince(before: RpcTraffic, after: RpcTraffic): RpcTraffic {
  return {
    httpRequests: after.httpRequests - before.httpRequests,
    rpcCalls: after.rpcCalls - before.rpcCalls,
    requestBytes: after.requestBytes - before.requestBytes,
    responseBytes: after.responseBytes - before.responseBytes,
  }
}
