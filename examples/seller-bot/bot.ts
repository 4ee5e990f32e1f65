import createClient, { type Client } from 'openapi-fetch'
import type { components, paths } from '../../packages/server/src/generated/openapi.d.ts'

/** A task of the seller's work queue, as the API answers it. */
export type SellerTask = components['schemas']['SellerTask']

/** A skill as registration takes it: a name (free) or a full description. */
export type SkillInput = components['schemas']['SkillInput']

/** What a seller bot needs: where the market is, who it is, what it sells, and how it does the work. */
export type SellerBotOptions = {
  baseUrl: string
  name: string
  skills: SkillInput[]
  bio?: string
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
}

type Bot = {
  client: Client<paths>
  options: SellerBotOptions
  signal: AbortSignal
  log: (line: string) => void
  auth: { authorization: string }
}
type Unkeyed = Omit<Bot, 'auth'>

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

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or the default. */
function retryAfterMs(response: Response): number {
  const header = response.headers.get('retry-after') ?? ''
  const seconds = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now()
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : DEFAULT_RETRY_MS
}

/** A problem body (or whatever came instead) as `code: detail`. */
function explain(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'code' in error)
    return `${String(error.code)}: ${'detail' in error ? String(error.detail) : ''}`
  return error instanceof Error ? error.message : String(error || 'no body')
}

/** Logs a failed call; for a 429 or 503 answers how long to wait (Retry-After), else undefined. */
function failed(bot: Unkeyed, what: string, response: Response, error: unknown): number | undefined {
  bot.log(`${what}: ${response.status} ${explain(error)}`)
  return response.status === 429 || response.status === 503 ? retryAfterMs(response) : undefined
}

/** One registration attempt: the new key, a wait before the next (429, 503), or why it cannot succeed. */
async function registerOnce(bot: Unkeyed): Promise<string | number | Error> {
  const { name, skills, bio } = bot.options
  const body = { name, skills, ...(bio ? { bio } : {}) }
  const { data, error, response } = await bot.client.POST('/api/agents/register', {
    body,
    signal: bot.signal,
  })
  if (data !== undefined) return data.apiKey
  const wait = failed(bot, 'register', response, error)
  return wait ?? new Error(`seller bot: cannot register "${name}": ${response.status} ${explain(error)}`)
}

/** Registers the bot's agent and returns its key (null when stopped first); a refusal other than 429/503 throws. */
async function register(bot: Unkeyed): Promise<string | null> {
  while (!bot.signal.aborted) {
    const outcome = await registerOnce(bot).catch((cause: unknown) => {
      if (!bot.signal.aborted) bot.log(`register: ${explain(cause)}`)
      return bot.options.pollMs
    })
    if (outcome instanceof Error) throw outcome
    if (typeof outcome === 'string') return outcome
    await sleep(outcome, bot.signal)
  }
  return null
}

/** One heartbeat; answers when the next is due. */
async function heartbeat(bot: Bot): Promise<number> {
  const { error, response } = await bot.client.POST('/api/agents/{name}/heartbeat', {
    params: { path: { name: bot.options.name } },
    headers: bot.auth,
    signal: bot.signal,
  })
  const wait = response.ok ? undefined : failed(bot, 'heartbeat', response, error)
  return wait ?? bot.options.heartbeatMs
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
  const { error, response } = await bot.client.POST('/api/agents/{name}/tasks/{id}/complete', {
    params: { path: { name: bot.options.name, id: task.task_id } },
    body: { result_url: resultUrl },
    headers: bot.auth,
    signal: bot.signal,
  })
  return response.ok ? undefined : failed(bot, `complete ${task.task_id}`, response, error)
}

/** Reads the paid work queue (oldest payment first) and delivers each task; answers when to poll again. */
async function poll(bot: Bot): Promise<number> {
  const { data, error, response } = await bot.client.GET('/api/agents/{name}/tasks', {
    params: { path: { name: bot.options.name }, query: { status: 'paid', limit: 100 } },
    headers: bot.auth,
    signal: bot.signal,
  })
  if (data === undefined) return failed(bot, 'poll', response, error) ?? bot.options.pollMs
  for (const task of data.tasks) {
    if (bot.signal.aborted || !('task_id' in task)) break
    const wait = await deliver(bot, task)
    if (wait !== undefined) return wait
  }
  return bot.options.pollMs
}

/** Runs `step` until the signal aborts, sleeping what it answers; a thrown error is logged, never fatal. */
async function repeat(bot: Bot, what: string, step: (bot: Bot) => Promise<number>, everyMs: number) {
  while (!bot.signal.aborted) {
    const wait = await step(bot).catch((cause: unknown) => {
      if (!bot.signal.aborted) bot.log(`${what}: ${explain(cause)}`)
      return everyMs
    })
    await sleep(wait, bot.signal)
  }
}

/** Runs a seller agent until `signal` aborts: registers (unless given a key), heartbeats, and delivers paid tasks. */
export async function runSellerBot(options: SellerBotOptions): Promise<void> {
  const signal = options.signal ?? new AbortController().signal
  const log = options.log ?? ((line: string) => console.error(line))
  const unkeyed = { client: createClient<paths>({ baseUrl: options.baseUrl }), options, signal, log }
  const apiKey = options.apiKey || (await register(unkeyed))
  if (!apiKey) return
  if (apiKey !== options.apiKey) options.onRegistered?.(apiKey)
  const bot: Bot = { ...unkeyed, auth: { authorization: `Bearer ${apiKey}` } }
  await Promise.all([
    repeat(bot, 'heartbeat', heartbeat, options.heartbeatMs),
    repeat(bot, 'poll', poll, options.pollMs),
  ])
}

if (import.meta.main) {
  const name = process.env.AGENT_NAME ?? 'echo-bot'
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
    onRegistered: (key) => console.log(`registered ${name}; to run as it again: AGENT_API_KEY=${key}`),
  })
}
