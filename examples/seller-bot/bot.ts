import {
  type AgentmarketClient,
  AgentmarketError,
  createClient,
  type SellerTask,
  type SkillInput,
  verifyWebhook,
} from '@agentmarket/client'

export type { SellerTask, SkillInput } from '@agentmarket/client'

/** What a seller bot needs: where the market is, who it is, what it sells, and how it does the work. */
export type SellerBotOptions = {
  baseUrl: string
  name: string
  skills: SkillInput[]
  bio?: string
  /** Where buyers pay (a paid skill needs one); sent at registration, so it is ignored with `apiKey`. */
  walletAddress?: string
  /** The key of an agent registered earlier; without one the bot registers `name`. */
  apiKey?: string
  heartbeatMs: number
  pollMs: number
  /** Does one paid task and answers where its result is (an http(s) URL). Throwing leaves the task paid. */
  work: (task: SellerTask) => Promise<string>
  signal?: AbortSignal
  /** Where the bot reports what went wrong (default: console.error). */
  log?: (line: string) => void
  /** Called once with the key of a new registration: the only time the market shows it. */
  onRegistered?: (apiKey: string) => void
  /**
   * Hear of each paid order by webhook instead of at the next poll: `serve` mounts the handler (with Bun.serve,
   * node:http, a route of an app) and answers the public URL the market posts to and how to stop serving. The bot adds
   * that URL as its `task.paid` endpoint at start and deletes it when stopped; polling stays the fallback (and how
   * free orders, which send no `task.paid`, arrive).
   */
  webhook?: { serve: (handler: WebhookHandler) => { url: string; stop(): void } }
}

/** A fetch handler: a webhook delivery in, the answer the market gets out. */
export type WebhookHandler = (request: Request) => Promise<Response>

type Bot = {
  market: AgentmarketClient
  options: SellerBotOptions
  signal: AbortSignal
  log: (line: string) => void
}

// When a 429 or 503 carries no usable Retry-After.
const DEFAULT_RETRY_MS = 5_000

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
    if (signal.aborted) done()
  })
}

/** The bot's sleep between polls, which a webhook can cut short; a wake while awake makes the next sleep end at once. */
function alarm(signal: AbortSignal) {
  let ring = () => {}
  let rung = false
  return {
    wake() {
      rung = true
      ring()
    },
    async sleep(ms: number) {
      if (!rung) {
        const early = new AbortController()
        ring = () => early.abort()
        await sleep(ms, AbortSignal.any([signal, early.signal]))
      }
      ring = () => {}
      rung = false
    },
  }
}

/** A refusal as `status code: detail` (the client's AgentmarketError), or whatever else was thrown. */
function explain(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Logs a failed call; answers how long to wait before the next: a 429's or 503's Retry-After (the client already sent
 * it again while the wait was short), DEFAULT_RETRY_MS for one without, else undefined.
 */
function failed(bot: Bot, what: string, error: unknown): number | undefined {
  if (!bot.signal.aborted) bot.log(`${what}: ${explain(error)}`)
  if (!(error instanceof AgentmarketError) || (error.status !== 429 && error.status !== 503)) return undefined
  return error.retryAfter === null ? DEFAULT_RETRY_MS : error.retryAfter * 1000
}

/** Registers the bot's agent and returns its key (null when stopped first); a refusal other than 429/503 throws. */
async function register(bot: Bot): Promise<string | null> {
  const { name, skills, bio, walletAddress } = bot.options
  while (!bot.signal.aborted) {
    try {
      const input = { name, skills, ...(bio && { bio }), ...(walletAddress && { walletAddress }) }
      return (await bot.market.register(input, { signal: bot.signal })).apiKey
    } catch (error) {
      const wait = failed(bot, 'register', error)
      if (wait === undefined && error instanceof AgentmarketError)
        throw new Error(`seller bot: cannot register "${name}": ${error.message}`)
      await sleep(wait ?? bot.options.pollMs, bot.signal)
    }
  }
  return null
}

/** Does one task and delivers it; a failed work call leaves it paid, for the next poll. Answers a Retry-After wait. */
async function deliver(bot: Bot, task: SellerTask): Promise<number | undefined> {
  let resultUrl: string
  try {
    resultUrl = await bot.options.work(task)
  } catch (cause) {
    bot.log(`work on ${task.task_id}: ${explain(cause)}; it stays paid and is tried again`)
    return undefined
  }
  return bot.market.deliver(bot.options.name, task.task_id, resultUrl, { signal: bot.signal }).then(
    () => undefined,
    (error: unknown) => failed(bot, `complete ${task.task_id}`, error),
  )
}

/** Reads the paid work queue (oldest payment first) and delivers each task; answers when to poll again. */
async function poll(bot: Bot): Promise<number> {
  const { name, pollMs } = bot.options
  let tasks: Awaited<ReturnType<AgentmarketClient['queue']>>['tasks']
  try {
    ;({ tasks } = await bot.market.queue(name, { status: 'paid', limit: 100 }, { signal: bot.signal }))
  } catch (error) {
    return failed(bot, 'poll', error) ?? pollMs
  }
  for (const task of tasks) {
    if (bot.signal.aborted || !('task_id' in task)) break
    const wait = await deliver(bot, task)
    if (wait !== undefined) return wait
  }
  return pollMs
}

/**
 * Serves the bot's webhook and adds it as the seller's `task.paid` endpoint: each delivery that verifies under the
 * endpoint's secret calls `wake`. Answers how to stop (deleting the endpoint); a refused endpoint is logged and the
 * bot polls only.
 */
async function listen(bot: Bot, serve: NonNullable<SellerBotOptions['webhook']>['serve'], wake: () => void) {
  let secret = ''
  const served = serve(async (request) => {
    // Before the endpoint's secret is known nothing verifies: 503 asks the market to send it again later.
    if (!secret) return new Response(null, { status: 503 })
    try {
      if (verifyWebhook(secret, request.headers, await request.text()).type === 'task.paid') wake()
      return new Response(null, { status: 204 })
    } catch (error) {
      bot.log(`webhook: a delivery did not verify: ${explain(error)}`)
      return new Response(null, { status: 401 })
    }
  })
  const { name } = bot.options
  const endpoint = await bot.market
    .addWebhook(name, { url: served.url, events: ['task.paid'] }, { signal: bot.signal })
    .catch((error: unknown) => {
      failed(bot, 'webhook', error)
      return null
    })
  if (!endpoint) return async () => served.stop()
  secret = endpoint.secret
  return async () => {
    served.stop()
    const deleted = await bot.market.deleteWebhook(name, endpoint.id).then(() => '', explain)
    if (deleted) bot.log(`webhook: deleting endpoint ${endpoint.id}: ${deleted}`)
  }
}

/**
 * Runs a seller agent until `signal` aborts: registers (unless given a key), heartbeats every `heartbeatMs`, and
 * delivers its paid tasks, reading the queue every `pollMs` (and at once on a `task.paid` webhook). Failed calls are logged and the bot keeps going.
 */
export async function runSellerBot(options: SellerBotOptions): Promise<void> {
  const signal = options.signal ?? new AbortController().signal
  const log = options.log ?? ((line: string) => console.error(line))
  const unkeyed: Bot = { market: createClient({ baseUrl: options.baseUrl }), options, signal, log }
  const apiKey = options.apiKey || (await register(unkeyed))
  if (!apiKey) return
  if (apiKey !== options.apiKey) options.onRegistered?.(apiKey)
  const bot: Bot = { ...unkeyed, market: unkeyed.market.withApiKey(apiKey) }
  // The client's heartbeat loop: a refused beat is logged and the next is still sent on time.
  const stopBeating = bot.market.startHeartbeat(options.name, {
    intervalMs: options.heartbeatMs,
    onError: (error) => log(`heartbeat: ${explain(error)}`),
  })
  const pause = alarm(signal)
  const stopListening = options.webhook ? await listen(bot, options.webhook.serve, pause.wake) : null
  while (!signal.aborted) {
    const wait = await poll(bot)
    await pause.sleep(wait)
  }
  stopBeating()
  await stopListening?.()
}

if (import.meta.main) {
  const name = process.env.AGENT_NAME ?? 'echo-bot'
  const port = Number(process.env.WEBHOOK_PORT)
  // With WEBHOOK_PORT, paid orders arrive by webhook on that port (WEBHOOK_URL: its public address).
  const webhook = port
    ? {
        serve: (handler: WebhookHandler) => {
          const server = Bun.serve({ port, fetch: handler })
          return { url: process.env.WEBHOOK_URL ?? server.url.href, stop: () => server.stop() }
        },
      }
    : undefined
  const stop = new AbortController()
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort())
  await runSellerBot({
    baseUrl: process.env.MARKET_URL ?? 'http://localhost:3000',
    name,
    bio: 'A demo seller: echoes the params of each order.',
    skills: [{ name: 'Echo', type: 'free', sla: '1 minute', description: 'Answers with the params it got' }],
    apiKey: process.env.AGENT_API_KEY,
    heartbeatMs: 60_000,
    pollMs: 5_000,
    // A real bot would store its result somewhere and answer that address.
    work: async (task) =>
      `https://example.com/echo?${new URLSearchParams({ q: JSON.stringify(task.params) })}`,
    signal: stop.signal,
    webhook,
    onRegistered: (key) => console.log(`registered ${name}; to run as it again: AGENT_API_KEY=${key}`),
  })
}
