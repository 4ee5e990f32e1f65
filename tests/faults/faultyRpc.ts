/** What a faulty RPC does to one matching request. */
export type RpcFault =
  /** Answers 503 without forwarding: the node never saw the call. */
  | 'drop'
  /** Forwards the call, then answers 503: the node acted, the answer was lost. */
  | 'forward-then-drop'

/** A JSON-RPC proxy in front of a real node, whose faults a test arms per method or for every call. */
export type FaultyRpc = {
  url: string
  /** The next `times` calls of `method` meet `fault`. */
  arm(method: string, fault: RpcFault, times?: number): void
  /**
   * The next call of `method` is held: `reached` resolves when it arrives; `release(fault)` ends it with `fault`,
   * or forwards it and answers normally when `fault` is null.
   */
  freeze(method: string): { reached: Promise<void>; release(fault: RpcFault | null): void }
  /** Every call dropped (the node down) until `down(false)`. */
  down(on: boolean): void
  /** Methods seen, in order. */
  calls: string[]
  stop(): void
}

type Frozen = { reached: () => void; released: Promise<RpcFault | null> }

/** Starts a JSON-RPC proxy on 127.0.0.1 that forwards to `target` unless a fault is armed. */
export function faultyRpc(target: string): FaultyRpc {
  const armed: { method: string; fault: RpcFault; times: number }[] = []
  const frozen = new Map<string, Frozen>()
  const calls: string[] = []
  let isDown = false
  const unavailable = () => new Response('rpc unavailable', { status: 503 })
  const forward = (text: string) =>
    fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })
  const apply = async (fault: RpcFault, text: string) => {
    if (fault === 'forward-then-drop') await (await forward(text)).arrayBuffer()
    return unavailable()
  }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const text = await request.text()
      const parsed = JSON.parse(text) as { method?: string } | { method?: string }[]
      const methods = (Array.isArray(parsed) ? parsed : [parsed]).map((call) => String(call.method))
      calls.push(...methods)
      if (isDown) return unavailable()
      const hold = methods.map((method) => frozen.get(method)).find((entry) => entry !== undefined)
      if (hold) {
        for (const method of methods) frozen.delete(method)
        hold.reached()
        const fault = await hold.released
        if (fault) return apply(fault, text)
        return forward(text)
      }
      const rule = armed.find((entry) => methods.includes(entry.method) && entry.times > 0)
      if (rule) {
        rule.times -= 1
        return apply(rule.fault, text)
      }
      return forward(text)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    arm(method, fault, times = 1) {
      armed.push({ method, fault, times })
    },
    freeze(method) {
      let reached: () => void = () => {}
      let release: (fault: RpcFault | null) => void = () => {}
      const reachedPromise = new Promise<void>((resolve) => {
        reached = resolve
      })
      const released = new Promise<RpcFault | null>((resolve) => {
        release = resolve
      })
      frozen.set(method, { reached, released })
      return { reached: reachedPromise, release }
    },
    down(on) {
      isDown = on
    },
    calls,
    stop: () => server.stop(true),
  }
}
