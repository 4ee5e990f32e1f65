/**
 * The floor's routes (bench/floor.ts serves them): bare Elysia routes, each doing one path's database work (floorWork.ts)
 * on statements prepared once, writes group-committed per turn of the event loop, answering the rows as JSON.
 * bench/readCpu.ts also calls them in process (`app.handle`).
 */
import { Elysia } from 'elysia'
import {
  type FloorDriver,
  floorGroupCommit,
  floorWork,
  keyDigest,
  openFloor,
  randomHex,
} from './floorWork.ts'

/** The SHA-256 digest of the request's bearer key ('' without one). */
const bearerDigest = (headers: Record<string, string | undefined>) =>
  keyDigest(headers.authorization?.replace(/^Bearer /, '') ?? '')

/** A write refused: the key is not the agent's. */
const refused = (set: { status?: number | string }) => {
  set.status = 401
  return { error: 'unauthorized' }
}

/** The floor app over `file` opened with `driver` (not listening). */
export function floorApp(file: string, driver: FloorDriver) {
  const db = openFloor(file, driver)
  const work = floorWork(db)
  const commit = floorGroupCommit(db)
  // The challenge floor's HMAC key: any 32 bytes, as the market's MPP secret is.
  const challengeSecret = randomHex(64)
  return new Elysia()
    .get('/agent/:name', ({ params }) => work.agent(params.name))
    .get('/search', ({ query }) => work.search(String(query.q)))
    .get('/task/:name/:id', ({ params }) => work.task(params.name, params.id))
    .get('/milestones/:name', ({ params }) => work.milestones(params.name))
    .get('/user/:name', ({ params }) => work.user(params.name))
    .post('/heartbeat/:name', async ({ params, headers, set }) => {
      const digest = bearerDigest(headers)
      return (await commit(() => work.heartbeat(params.name, digest, Date.now())))
        ? { ok: true }
        : refused(set)
    })
    .post('/register', async ({ body, set }) => {
      // The name from the body, as the market reads it; the insert's unique index refuses a taken one.
      const name = (body as { name?: unknown } | null)?.name
      if (typeof name !== 'string' || name.length === 0 || name.length > 64) {
        set.status = 400
        return { error: 'name' }
      }
      let answer: ReturnType<typeof work.register> | undefined
      await commit(() => {
        answer = work.register(name, Date.now())
      })
      return answer
    })
    .post('/milestone/:name', async ({ params, headers, body, set }) => {
      const digest = bearerDigest(headers)
      const { date, title } = body as { date: string; title: string }
      const fields = { id: `ms_${randomHex(32)}`, date, title, at: Date.now() }
      const milestone = await commit(() => work.milestone(params.name, digest, fields))
      if (!milestone) return refused(set)
      set.status = 201
      return milestone
    })
    .post('/order/:name', async ({ params, body, set }) => {
      const { skill, params: input } = body as { skill: string; params?: unknown }
      const seller = work.seller(params.name, skill)
      if (!seller) {
        set.status = 404
        return { error: 'not found' }
      }
      const id = `task_${randomHex(32)}`
      const at = Date.now()
      const task = await commit(() =>
        work.order(params.name, seller.skill, id, JSON.stringify(input ?? {}), at),
      )
      set.status = 201
      return task
    })
    .post('/challenge/:name/:slug', ({ params, body, set }) => {
      // The 402's own work; the body is read and parsed by Elysia as the market reads it.
      const challenge = work.challenge(params.name, params.slug, body, challengeSecret)
      if (challenge === 'invalid') {
        set.status = 400
        return { error: 'invalid order' }
      }
      if (!challenge) {
        set.status = 404
        return { error: 'not found' }
      }
      set.status = 402
      set.headers['www-authenticate'] = challenge.header
      set.headers['cache-control'] = 'no-store'
      return challenge.problem
    })
    .put('/agent/:name', async ({ params, headers, body, set }) => {
      const digest = bearerDigest(headers)
      const { bio } = body as { bio: string }
      const agent = await commit(() => work.updateBio(params.name, digest, bio, Date.now()))
      return agent ?? refused(set)
    })
}
