/**
 * What a request costs Bun itself for two things the shipped server does on every answer: asking for the client's
 * address (`server.requestIP`, which a per-address rate limit needs) and adding a response header (`X-Request-Id`).
 * A bare Bun.serve hello world, MODE plain | address | header | both; bench/http.ts measures each in turn.
 * Usage: PORT=… MODE=address bun bench/bunCosts.ts
 */
const mode = process.env.MODE ?? 'plain'
const address = mode === 'address' || mode === 'both'
const header = mode === 'header' || mode === 'both'
let seen = 0

Bun.serve({
  port: Number(process.env.PORT ?? 3997),
  hostname: '127.0.0.1',
  fetch(request, server) {
    // Used, so the call is not optimized away.
    if (address && server.requestIP(request)?.address) seen++
    const response = new Response('hello', { headers: { 'content-type': 'text/plain' } })
    if (header) response.headers.set('x-request-id', '00000000-0000-4000-8000-000000000000')
    return response
  },
})
console.log(`bun costs (${mode}) on ${process.env.PORT}, ${seen}`)
