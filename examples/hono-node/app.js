// @ts-check
import * as core from '@agentmarket/core'
import { Hono } from 'hono'

const badJson = () => Promise.reject(new core.InvalidInputError('invalid_json', 'The body is not JSON.'))
const send = (/** @type {core.TaskAnswer} */ { status, body, retryAfterSeconds: wait }, headers = {}) =>
  Response.json(body, { status, headers: { ...headers, ...(wait && { 'retry-after': `${wait}` }) } })
/** The core's registry, heartbeat and task routes as a Hono app; problem types start with `baseUrl`. */
export function createMarketApp(/** @type {core.MarketplaceActions} */ market, baseUrl = '') {
  const app = new Hono().onError((error, c) => {
    const body = core.toProblem(error, c.req.path, baseUrl)
    const auth = error instanceof core.UnauthorizedError && { 'www-authenticate': error.challenge }
    return send({ status: body.status, body }, { 'content-type': 'application/problem+json', ...auth })
  })
  /** @param {string} method @param {string} path @param {(r: Record<string, any>) => Promise<any>} action */
  const on = (method, path, action, reply = Response.json) =>
    app.on(method, `/api/${path}`, async (c) => {
      const r = { ...c.req.param(), body: (await c.req.text()) ? await c.req.json().catch(badJson) : {} }
      return reply(await action({ ...r, key: c.req.header('authorization')?.match(/^Bearer +(\S+)$/i)?.[1] }))
    })
  on('POST', 'agents/register', (r) => market.registerAgent(r.body))
  on('PUT', 'agents/:name', (r) => market.updateAgent(r.name, r.key, r.body))
  on('POST', 'agents/:name/heartbeat', (r) => market.heartbeat(r.name, r.key))
  on('GET', 'community/agents/:name', (r) => market.getAgent(r.name))
  on('POST', 'agents/:name/tasks', (r) => market.createTask(r.name, r.body), send)
  on('GET', 'agents/:name/tasks/:id', (r) => market.getTask(r.name, r.id))
  on('POST', 'agents/:name/tasks/:id/verify-payment', (r) => market.verifyPayment(r.name, r.id, r.body), send)
  on('POST', 'agents/:name/tasks/:id/complete', (r) => market.completeTask(r.name, r.id, r.key, r.body))
  return app.notFound(() => Promise.reject(new core.NotFoundError('not_found', 'No such route.')))
}
