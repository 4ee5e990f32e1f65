/**
 * What a request costs Bun itself for the things the shipped server does on every answer: asking for the client's
 * address (`server.requestIP`, which a per-address rate limit needs), reading one request header (the caller's
 * `X-Request-Id`: Bun then makes the request's whole header list) and adding a response header (`X-Request-Id`).
 * A bare Bun.serve hello world, MODE plain | address | read | header | all; bench/http.ts measures each in turn.
 * Usage: PORT=… MODE=address bun bench/bunCosts.ts
 */
const mode = process.env.MODE ?? 'plain'
const address = mode === 'address' || mode === 'all'
const read = mode === 'read' || mode === 'all'
const header = mode === 'header' || mode === 'all'
let seen = 0

Bun.serve({
  port: Number(process.env.PORT ?? 3997),
  hostname: '127.0.0.1',
  fetch(request, server) {
    // Used, so the calls are not optimized away.
    if (address && server.requestIP(request)?.address) seen++
    if (read && request.headers.get('x-request-id') !== null) seen++
    const response = new Response('hello', { headers: { 'content-type': 'text/plain' } })
    if (header) response.headers.set('x-request-id', '00000000-0000-4000-8000-000000000000')
    return response
  },
})
console.log(`bun costs (${mode}) on ${process.env.PORT}, ${seen}`)
