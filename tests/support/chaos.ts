import { freePort, type MarketServer, startMarketServer } from './process.ts'

// A steady write load for fault injection, and the ledger that judges it: every write the load sends is a milestone
// with a unique title and its own Idempotency-Key, retried (same key, same body) until a node acknowledges it, as a
// careful client does. After the fault and the recovery, the ledger reads every agent's milestones back and counts
// what was acknowledged but lost, what landed twice, and which answers were 5xx other than the allowed refusals.

/** An agent the load writes milestones for: its name and API key. */
export type LoadAgent = { name: string; key: string }

/** One write of the load: what it sent, and what came of it. */
type Sent = { agent: LoadAgent; title: string; key: string; acknowledged: boolean; attempts: number }

/** What the load saw, by answer. */
export type LoadTally = {
  /** Writes sent, and those acknowledged (2xx) by the end. */
  sent: number
  acknowledged: number
  /** Every answer's status, and 'network' for a refused or reset connection, 'timeout' for no answer in time. */
  answers: Record<string, number>
  /** 5xx answers other than the refusals a fault may give (503, and 507 for a full disk). */
  unexpected5xx: number
  /** The slowest answer, in milliseconds (a figure, not a verdict: the machine may be busy). */
  slowestMs: number
  /** The slowest answer of each status, in milliseconds (figures: how long a refusal or a backlog took). */
  slowestByAnswer: Record<string, number>
  /** Writes whose first outcome the server could not know (409 idempotency_outcome_unknown): the client read them. */
  readBack: number
}

/** The ledger's verdict: acknowledged writes not found, and writes found more than once. */
export type LedgerVerdict = { lost: number; duplicated: number }

/** The statuses a dependency fault may answer (a refusal with Retry-After), never counted as a defect. */
const FAULT_REFUSALS = new Set([503, 507])

/** How long a client waits for one answer before it calls the request lost and retries it (with its key). */
const ANSWER_WAIT_MS = 30_000

/** A steady load: `perSecond` milestone writes, spread over `agents`, each sent to the next of `targets()`. */
export type SteadyLoad = {
  /** Resolves once `count` more writes have been acknowledged after the call (the load is serving again). */
  acknowledgedMore(count: number): Promise<void>
  /** Resolves once the load has seen `count` answers of `answer` (a status, 'network' or 'timeout') in all. */
  seen(answer: string, count: number): Promise<void>
  /** Stops sending new writes, retries every unacknowledged one until it is acknowledged, and tallies. */
  stop(): Promise<LoadTally & { writes: Sent[] }>
}

/** Starts a steady load; `targets()` is read for every attempt, so a restarted node on a new port is used. */
export function steadyLoad(options: {
  targets: () => string[]
  agents: LoadAgent[]
  perSecond: number
  label: string
}): SteadyLoad {
  const writes: Sent[] = []
  const answers: Record<string, number> = {}
  const waiters: { target: number; resolve: () => void }[] = []
  let acknowledged = 0
  let unexpected5xx = 0
  let slowestMs = 0
  const slowestByAnswer: Record<string, number> = {}
  let readBack = 0
  let next = 0
  let running = true
  const inFlight = new Set<Promise<void>>()

  const count = (answer: string) => {
    answers[answer] = (answers[answer] ?? 0) + 1
  }
  const acknowledge = (write: Sent) => {
    write.acknowledged = true
    acknowledged++
    for (const waiter of waiters.filter((waiter) => acknowledged >= waiter.target)) {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve()
    }
  }

  /**
   * One attempt: true when acknowledged, 'unknown' when the server cannot know whether a first attempt under this key
   * landed (its node died mid-write), else the wait the answer asked for.
   */
  const attempt = async (write: Sent): Promise<true | 'unknown' | number> => {
    const bases = options.targets()
    const base = bases[(next++ + write.attempts) % bases.length]
    write.attempts++
    const started = performance.now()
    try {
      const response = await fetch(`${base}/api/agents/${write.agent.name}/milestones`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${write.agent.key}`,
          'content-type': 'application/json',
          'idempotency-key': write.key,
        },
        body: JSON.stringify({ date: '2026-11-28', title: write.title }),
        signal: AbortSignal.timeout(ANSWER_WAIT_MS),
      })
      const text = await response.text()
      const took = performance.now() - started
      slowestMs = Math.max(slowestMs, took)
      slowestByAnswer[response.status] = Math.max(slowestByAnswer[response.status] ?? 0, took)
      count(String(response.status))
      if (response.status < 300) return true
      if (response.status === 409 && text.includes('idempotency_outcome_unknown')) return 'unknown'
      if (response.status >= 500 && !FAULT_REFUSALS.has(response.status)) unexpected5xx++
      return Math.min(Number(response.headers.get('retry-after') ?? 1), 3) * 1000
    } catch (error) {
      count((error as Error).name === 'TimeoutError' ? 'timeout' : 'network')
      return 250
    }
  }

  /**
   * Sends one write until it is acknowledged. When the server says the first attempt's outcome is unknown, the client
   * does what the problem says: reads the milestones, and sends it again under a new key only if it is not there.
   */
  const send = async (write: Sent) => {
    for (;;) {
      const outcome = await attempt(write)
      if (outcome === true) return acknowledge(write)
      if (outcome === 'unknown') {
        readBack++
        const bases = options.targets()
        const landed = await milestoneTitles(bases[write.attempts % bases.length] ?? '', write.agent).then(
          (titles) => titles.includes(write.title),
          () => null,
        )
        if (landed) return acknowledge(write)
        if (landed === false) write.key = `${write.title}-again-${write.attempts}`
        continue
      }
      await Bun.sleep(outcome)
    }
  }

  let sequence = 0
  const timer = setInterval(() => {
    if (!running) return
    const agent = options.agents[sequence % options.agents.length]
    if (!agent) return
    const id = `${options.label}-${sequence++}-${crypto.randomUUID().slice(0, 8)}`
    const write: Sent = { agent, title: id, key: id, acknowledged: false, attempts: 0 }
    writes.push(write)
    const flight = send(write)
    inFlight.add(flight)
    void flight.finally(() => inFlight.delete(flight))
  }, 1000 / options.perSecond)

  return {
    acknowledgedMore(more) {
      return new Promise((resolve) => waiters.push({ target: acknowledged + more, resolve }))
    },
    async seen(answer, times) {
      while ((answers[answer] ?? 0) < times) await Bun.sleep(20)
    },
    async stop() {
      running = false
      clearInterval(timer)
      await Promise.all(inFlight)
      return {
        sent: writes.length,
        acknowledged,
        answers,
        unexpected5xx,
        slowestMs,
        slowestByAnswer,
        readBack,
        writes,
      }
    },
  }
}

/** Reads every milestone of `agent` from `base` (every page): their titles. */
async function milestoneTitles(base: string, agent: LoadAgent): Promise<string[]> {
  const titles: string[] = []
  for (let offset = 0; ; offset += 100) {
    const response = await fetch(`${base}/api/agents/${agent.name}/milestones?limit=100&offset=${offset}`)
    if (response.status !== 200) throw new Error(`milestones of ${agent.name}: ${response.status}`)
    const { milestones } = (await response.json()) as { milestones: { title: string }[] }
    titles.push(...milestones.map((milestone) => milestone.title))
    if (milestones.length < 100) return titles
  }
}

/** Counts, over every write of the load, the acknowledged ones missing from `base` and the ones found twice. */
export async function ledgerVerdict(base: string, writes: Sent[]): Promise<LedgerVerdict> {
  const found = new Map<string, number>()
  const agents = [...new Map(writes.map((write) => [write.agent.name, write.agent])).values()]
  for (const agent of agents)
    for (const title of await milestoneTitles(base, agent)) found.set(title, (found.get(title) ?? 0) + 1)
  let lost = 0
  let duplicated = 0
  for (const write of writes) {
    const times = found.get(write.title) ?? 0
    if (write.acknowledged && times === 0) lost++
    if (times > 1) duplicated++
  }
  return { lost, duplicated }
}

/** Registers `count` agents on `base` for the load: their names and keys. */
export async function loadAgents(base: string, label: string, count: number): Promise<LoadAgent[]> {
  const agents: LoadAgent[] = []
  for (let index = 0; index < count; index++) {
    const name = `${label}-agent-${index}`
    const response = await fetch(`${base}/api/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    })
    if (response.status !== 200)
      throw new Error(`register ${name}: ${response.status} ${await response.text()}`)
    agents.push({ name, key: ((await response.json()) as { apiKey: string }).apiKey })
  }
  return agents
}

/** One line of figures for a fault: what the load saw and the ledger's verdict. */
export function chaosLine(
  fault: string,
  tally: LoadTally,
  verdict: LedgerVerdict,
  recoveryMs?: number,
): string {
  const answers = Object.entries(tally.answers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([answer, times]) => {
      const slowest = tally.slowestByAnswer[answer]
      return slowest === undefined
        ? `${answer}×${times}`
        : `${answer}×${times} ≤${(slowest / 1000).toFixed(1)} s`
    })
    .join(' ')
  const recovery = recoveryMs === undefined ? '' : `, recovered in ${(recoveryMs / 1000).toFixed(1)} s`
  const readBack = tally.readBack ? `, ${tally.readBack} read back after an unknown outcome` : ''
  return `chaos ${fault}: ${tally.sent} writes, ${tally.acknowledged} acknowledged${readBack}, lost ${verdict.lost}, duplicated ${verdict.duplicated}, unexpected 5xx ${tally.unexpected5xx} (${answers}); slowest answer ${(tally.slowestMs / 1000).toFixed(1)} s${recovery}`
}

/** A TCP link to a dependency that a test can freeze (bytes held, connections open) or take down (refused). */
export type FaultyLink = {
  /** The port clients connect to. */
  port: number
  /** Passes bytes both ways (the start state), freezes them, or refuses connections and drops the open ones. */
  set(mode: 'pass' | 'freeze' | 'down'): Promise<void>
  stop(): Promise<void>
}

type LinkState = {
  upstream?: import('bun').Socket<undefined>
  toUpstream: Uint8Array[]
  toClient: Uint8Array[]
}
type LinkSocket = import('bun').Socket<LinkState>

/** A TCP proxy on `port` of 127.0.0.1 in front of `upstreamPort`, whose link faults a test controls. */
export async function faultyLink(upstreamPort: number, port: number): Promise<FaultyLink> {
  let mode: 'pass' | 'freeze' | 'down' = 'pass'
  const open = new Set<LinkSocket>()
  /** Sends what waits each way, unless the link is frozen. */
  const flush = (socket: LinkSocket) => {
    if (mode !== 'pass') return
    const { upstream, toUpstream, toClient } = socket.data
    for (const data of toClient.splice(0)) socket.write(data)
    if (upstream) for (const data of toUpstream.splice(0)) upstream.write(data)
  }
  const listen = () =>
    Bun.listen<LinkState>({
      hostname: '127.0.0.1',
      port,
      socket: {
        async open(socket) {
          socket.data = { toUpstream: [], toClient: [] }
          open.add(socket)
          socket.data.upstream = await Bun.connect({
            hostname: '127.0.0.1',
            port: upstreamPort,
            socket: {
              data(_upstream, data) {
                socket.data.toClient.push(new Uint8Array(data))
                flush(socket)
              },
              close() {
                socket.end()
              },
              error() {
                socket.end()
              },
            },
          }).catch(() => {
            socket.end()
            return undefined
          })
          flush(socket)
        },
        data(socket, data) {
          socket.data.toUpstream.push(new Uint8Array(data))
          flush(socket)
        },
        close(socket) {
          open.delete(socket)
          socket.data.upstream?.end()
        },
        error(socket) {
          socket.data.upstream?.end()
        },
      },
    })
  let listener: ReturnType<typeof listen> | null = listen()
  return {
    port,
    async set(next) {
      mode = next
      if (next === 'down') {
        listener?.stop(true)
        listener = null
        for (const socket of open) socket.terminate()
        open.clear()
        return
      }
      listener ??= listen()
      for (const socket of open) flush(socket)
    },
    async stop() {
      listener?.stop(true)
      for (const socket of open) socket.terminate()
    },
  }
}

/** A `bun start` node that a test can SIGKILL and start again on the same port and database. */
export type ChaosNode = {
  base: string
  /** SIGKILLs the node and waits until it is gone. */
  kill(): Promise<void>
  /** Starts it again on its port; resolves once its health answers. */
  restart(): Promise<void>
  /** True while the node's process runs (a dependency fault must never end it). */
  alive(): boolean
  stop(): void
}

/** Starts a node with `env` (DATABASE_URL and the rest) on a port of its own. */
export async function chaosNode(env: Record<string, string>): Promise<ChaosNode> {
  const port = freePort()
  let server: MarketServer = await startMarketServer(env, { port })
  return {
    base: server.base,
    async kill() {
      server.process.kill('SIGKILL')
      await server.process.exited
    },
    async restart() {
      server = await startMarketServer(env, { port })
    },
    alive: () => server.process.exitCode === null && server.process.signalCode === null,
    stop: () => server.stop(),
  }
}
