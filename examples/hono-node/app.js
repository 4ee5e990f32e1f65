import { answerResponse, bearerKey, problemResponse, readJsonObject, routeNotFound } from '@agentmarket/core'
import { Hono } from 'hono'

const name = (/** @type {import('hono').Context} */ c) => c.req.param('name') ?? ''
const id = (/** @type {import('hono').Context} */ c) => c.req.param('id') ?? ''
const key = (/** @type {import('hono').Context} */ c) => bearerKey(c.req.raw)
const body = async (/** @type {import('hono').Context} */ c) => (await readJsonObject(c.req.raw)) ?? {}
/** The marketplace's registry, heartbeat and task routes as a Hono app. */
export function createMarketApp(/** @type {import('@agentmarket/core').MarketplaceActions} */ market) {
  const app = new Hono()
  app.onError((error, c) => problemResponse(error, c.req.raw, market.config.baseUrl))
  app.notFound((c) => problemResponse(routeNotFound(), c.req.raw, market.config.baseUrl))
  app.post('/api/agents/register', async (c) => c.json(await market.registerAgent(await body(c))))
  app.put('/api/agents/:name', async (c) => c.json(await market.updateAgent(name(c), key(c), await body(c))))
  app.post('/api/agents/:name/heartbeat', async (c) => c.json(await market.heartbeat(name(c), key(c))))
  app.get('/api/community/agents/:name', async (c) => c.json(await market.getAgent(name(c))))
  app.post('/api/agents/:name/tasks', async (c) => {
    const idempotencyKey = c.req.header('idempotency-key')
    return answerResponse(await market.createTask(name(c), await body(c), { idempotencyKey }))
  })
  app.get('/api/agents/:name/tasks/:id', async (c) => c.json(await market.getTask(name(c), id(c))))
  app.post('/api/agents/:name/tasks/:id/verify-payment', async (c) =>
    answerResponse(await market.verifyPayment(name(c), id(c), await body(c))),
  )
  app.post('/api/agents/:name/tasks/:id/complete', async (c) =>
    c.json(await market.completeTask(name(c), id(c), key(c), await body(c))),
  )
  return app
}
