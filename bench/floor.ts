/**
 * The floor server of the HTTP benchmarks: bare Elysia routes, each doing one path's database work (bench/lib/
 * floorWork.ts) on statements prepared once, writes group-committed per turn of the event loop, and answering the rows
 * as JSON (bench/lib/floorApp.ts). What the market adds above it is the cost of being the market.
 * Usage: PORT=… DATABASE=<file> DRIVER=bun|libsql bun bench/floor.ts
 */
import { floorApp } from './lib/floorApp.ts'
import type { FloorDriver } from './lib/floorWork.ts'

const port = Number(process.env.PORT ?? 3998)
floorApp(process.env.DATABASE ?? '', (process.env.DRIVER ?? 'bun') as FloorDriver).listen({
  port,
  hostname: '127.0.0.1',
})
console.log(`floor on ${port}`)
