// @ts-check
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import {
  defaultConfig,
  InvalidInputError,
  MarketError,
  Marketplace,
  memoryStore,
  NotFoundError,
  toProblem,
  UnauthorizedError,
} from '@agentmarket/core'

/** @typedef {import('node:http').IncomingMessage} Request */
/** @typedef {import('node:http').ServerResponse} Response */
/** @typedef {{ request: Request, response: Response, url: URL, name: string }} Call */
/**
 * What a route answers: a JSON body (none for a 304), a status and headers; null when it wrote the answer.
 * @typedef {{ status?: number, body?: unknown, headers?: Record<string, string> } | null} Reply
 */

/** The largest request body, as in CONTRACT.md. */
const MAX_BODY_BYTES = 64 * 1024
/** How often an idle event stream sends a comment, so proxies keep it open. */
const KEEP_ALIVE_MS = 15_000

/**
 * Stops with one line naming a malformed variable, as the server does.
 * @param {string} name @param {string} value @param {string} why @returns {never}
 */
function invalid(name, value, why) {
  console.error(`node-http: ${name}="${value}" is invalid: ${why}`)
  process.exit(1)
}

/** The listen port from PORT (default 3000). */
function portFrom(value = '3000') {
  const port = Number(value)
  return /^\d{1,5}$/.test(value) && port <= 65_535 ? port : invalid('PORT', value, 'must be a port number')
}

const port = portFrom(process.env.PORT)
const baseUrl = process.env.BASE_URL ?? `http://localhost:${port}`
if (!/^https?:\/\//.test(baseUrl) || !URL.canParse(baseUrl))
  invalid('BASE_URL', baseUrl, 'must be an http(s) URL')
const market = Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrl) })

const tooLarge = () =>
  new MarketError('payload_too_large', 413, 'Payload too large', `The body exceeds ${MAX_BODY_BYTES} bytes.`)

/**
 * The request body, refused with a 413 as soon as it passes 64 KiB, whether Content-Length said so or not.
 * @param {Request} request @returns {Promise<Buffer>}
 */
function readBody(request) {
  return new Promise((resolve, reject) => {
    if (Number(request.headers['content-length'] ?? 0) > MAX_BODY_BYTES) reject(tooLarge())
    /** @type {Buffer[]} */
    const chunks = []
    let size = 0
    // Past the limit the rest is still read and dropped: the connection stays usable for the 413.
    request.on('data', (/** @type {Buffer} */ chunk) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) reject(tooLarge())
      else chunks.push(chunk)
    })
    request.on('end', () => resolve(Buffer.concat(chunks)))
    request.on('error', reject)
  })
}

/**
 * The JSON body ({} when empty): 415 when it is not sent as JSON, 400 when it does not parse.
 * @param {Request} request
 */
async function readJson(request) {
  const bytes = await readBody(request)
  if (bytes.length === 0) return {}
  if (!/^application\/([\w.-]+\+)?json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
    throw new MarketError('unsupported_media_type', 415, 'Unsupported media type', 'Send JSON.')
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new InvalidInputError('invalid_json', 'The request body is not valid JSON.')
  }
}

/** The key of an `Authorization: Bearer` header, or undefined. @param {Call} call */
function bearerKey({ request }) {
  return /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '')?.[1]
}

/** The agent card with a content ETag; 304 when the client already has it. @param {Call} call */
async function agentCard({ request, name }) {
  const body = await market.agentCard(name)
  const digest = createHash('sha256').update(JSON.stringify(body)).digest('base64url')
  const headers = { etag: `W/"${digest.slice(0, 27)}"`, 'cache-control': 'public, max-age=60' }
  const seen = (request.headers['if-none-match'] ?? '')
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
  return seen.includes(headers.etag.slice(2)) ? { status: 304, headers } : { body, headers }
}

/** The live feed as server-sent events, from Last-Event-ID on, until the client leaves. @param {Call} call */
async function streamFeed({ request, response, url }) {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' })
  response.write('retry: 2000\n: connected\n\n')
  const resumeFrom =
    request.headers['last-event-id']?.toString() ?? url.searchParams.get('after') ?? undefined
  const unsubscribe = await market.followFeed(resumeFrom, (events) => {
    for (const event of events) response.write(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`)
  })
  const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), KEEP_ALIVE_MS)
  response.on('close', () => {
    clearInterval(keepAlive)
    unsubscribe()
  })
  return null
}

/** The live feed: a JSON page, or a stream with `Accept: text/event-stream`. @param {Call} call */
async function liveFeed(call) {
  if (call.request.headers.accept?.includes('text/event-stream')) return streamFeed(call)
  return { body: await market.liveFeed(Object.fromEntries(call.url.searchParams)) }
}

/** Registers an agent; the answer holds its API key, once. @param {Call} call */
async function register({ request }) {
  return { body: await market.registerAgent(await readJson(request)) }
}

/** Records a heartbeat of the agent whose bearer key is sent. @param {Call} call */
async function heartbeat(call) {
  return { body: await market.heartbeat(call.name, bearerKey(call)) }
}

/** The public agent record. @param {Call} call */
async function getAgent({ name }) {
  return { body: await market.getAgent(name) }
}

/** @type {[string, RegExp, (call: Call) => Promise<Reply>][]} */
const routes = [
  ['POST', /^\/api\/agents\/register$/, register],
  ['POST', /^\/api\/agents\/([^/]+)\/heartbeat$/, heartbeat],
  ['GET', /^\/api\/community\/agents\/([^/]+)$/, getAgent],
  ['GET', /^\/api\/agents\/([^/]+)\/agent-card\.json$/, agentCard],
  ['GET', /^\/api\/feed\/live$/, liveFeed],
]

const notFound = () => new NotFoundError('not_found', 'No such resource or method.')

/** A decoded path segment; a malformed one names nothing. @param {string} [raw] */
function segment(raw = '') {
  try {
    return decodeURIComponent(raw)
  } catch {
    throw notFound()
  }
}

/** Finds the route of a request and runs it; an unknown route or method is a 404. @param {Call} call */
async function route(call) {
  for (const [method, pattern, action] of routes) {
    const match = pattern.exec(call.url.pathname)
    if (match && method === call.request.method) return action({ ...call, name: segment(match[1]) })
  }
  throw notFound()
}

/**
 * Writes a JSON answer, or an empty one when `body` is undefined.
 * @param {Response} response @param {number} status @param {unknown} body
 */
function send(response, status, body, headers = {}) {
  response.writeHead(
    status,
    body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  )
  response.end(body === undefined ? undefined : JSON.stringify(body))
}

/**
 * Answers any thrown value as an RFC 9457 problem.
 * @param {Response} response @param {unknown} error @param {string} path
 */
function sendProblem(response, error, path) {
  const problem = toProblem(error, path, baseUrl)
  if (!(error instanceof MarketError)) console.error('node-http: unexpected error', error)
  const challenge = error instanceof UnauthorizedError ? { 'www-authenticate': error.challenge } : {}
  send(response, problem.status, problem, { 'content-type': 'application/problem+json', ...challenge })
}

/**
 * Answers one request with its route's reply, or with a problem.
 * @param {Request} request @param {Response} response
 */
async function handle(request, response) {
  // A fixed origin, so any request target parses; only the path and query are read.
  const url = new URL(`http://localhost${request.url?.startsWith('/') ? request.url : '/'}`)
  try {
    const reply = await route({ request, response, url, name: '' })
    if (reply) send(response, reply.status ?? 200, reply.body, reply.headers)
  } catch (error) {
    if (response.headersSent) response.end()
    else sendProblem(response, error, url.pathname)
  }
}

const server = createServer(handle)
server.listen(port, () =>
  console.log(`node-http: listening on http://localhost:${port} (Node.js ${process.version})`),
)
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  // Open event streams never end by themselves.
  server.closeAllConnections()
})
