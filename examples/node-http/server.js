// @ts-check
import { createServer } from 'node:http'
import { createFetchHandler, defaultConfig, Marketplace, memoryStore } from '@agentmarket/core'

/** @typedef {import('node:http').IncomingMessage} IncomingMessage */
/** @typedef {import('node:http').ServerResponse} ServerResponse */

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
// Every operation of the core's route table, with its body limit, ETags, feed stream and problems.
const marketplace = createFetchHandler(market)

/**
 * A Node request body as a web stream that reads only as fast as the handler does (at most 64 KiB ahead). When the
 * handler stops reading (a body over 64 KiB, or one it never needed), the rest is read and dropped, never held, so
 * the connection stays usable for the answer.
 * @param {IncomingMessage} incoming
 */
function bodyOf(incoming) {
  if (incoming.method === 'GET' || incoming.method === 'HEAD') return undefined
  let open = true
  return new ReadableStream(
    {
      start(controller) {
        incoming.on('data', (/** @type {Buffer} */ chunk) => {
          if (!open) return
          controller.enqueue(new Uint8Array(chunk))
          if ((controller.desiredSize ?? 0) <= 0) incoming.pause()
        })
        incoming.on('end', () => open && controller.close())
        incoming.on('error', (error) => open && controller.error(error))
      },
      pull() {
        incoming.resume()
      },
      cancel() {
        open = false
        incoming.resume()
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  )
}

/**
 * A Node request as a web Request, aborted when its client leaves (an event stream then ends).
 * @param {IncomingMessage} incoming @param {ServerResponse} outgoing
 */
function requestOf(incoming, outgoing) {
  const left = new AbortController()
  outgoing.once('close', () => left.abort())
  const headers = new Headers()
  for (const [name, value] of Object.entries(incoming.headers))
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value)
  // A fixed origin, so any request target parses; the handler reads the path and query.
  const target = incoming.url?.startsWith('/') ? incoming.url : '/'
  return new Request(`http://localhost${target}`, {
    method: incoming.method,
    headers,
    body: bodyOf(incoming),
    signal: left.signal,
    // @ts-expect-error Node needs `duplex` for a streamed body; the DOM typings do not know it.
    duplex: 'half',
  })
}

/**
 * Writes a web Response to Node, streaming its body (the live feed stays open until its client leaves).
 * @param {Response} response @param {ServerResponse} outgoing
 */
async function send(response, outgoing) {
  outgoing.writeHead(response.status, Object.fromEntries(response.headers))
  const reader = response.body?.getReader()
  for (let read = await reader?.read(); read && !read.done; read = await reader?.read()) {
    // Wait while the socket is full: a client that stops reading an event stream then backs up into the stream,
    // which drops it past its limit, instead of into this process's memory.
    if (!outgoing.write(read.value))
      await new Promise((resolve) => {
        outgoing.once('drain', resolve)
        outgoing.once('close', resolve)
      })
    if (outgoing.destroyed) return reader?.cancel()
  }
  outgoing.end()
}

const server = createServer((incoming, outgoing) => {
  marketplace
    .fetch(requestOf(incoming, outgoing))
    .then((response) => send(response, outgoing))
    .catch((error) => {
      console.error('node-http: could not answer', error)
      outgoing.destroy()
    })
})
server.listen(port, () =>
  console.log(`node-http: listening on http://localhost:${port} (Node.js ${process.version})`),
)
process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  // Open event streams never end by themselves.
  server.closeAllConnections()
})
