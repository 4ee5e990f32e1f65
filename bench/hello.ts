/**
 * The baseline of the HTTP benchmarks: an Elysia hello-world route on the same Bun, measured in the same run.
 * Usage: PORT=… bun bench/hello.ts
 */
import { Elysia } from 'elysia'

const port = Number(process.env.PORT ?? 3999)
new Elysia().get('/', () => 'hello').listen({ port, hostname: '127.0.0.1' })
console.log(`hello on ${port}`)
