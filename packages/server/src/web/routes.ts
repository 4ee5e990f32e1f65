import { MarketError, type PublicTaskRow } from '@agentmarket/core'
import { Elysia } from 'elysia'
import type { RouteDeps } from '../routes/deps.ts'
import { LIVE_FEED_SCRIPT, STYLESHEET } from './assets.ts'
import { pageResponse } from './layout.ts'
import { agentPage, feedPage, homePage, notFoundPage, type SiteInfo, userPage } from './pages.ts'

const ASSET_HEADERS = { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }
const PAGE_SIZE = 20
/** The agent list's query parameters the front page passes through besides q and offset. */
const LIST_FILTERS = ['type', 'max_price', 'status', 'owner', 'sort'] as const

/** Whether `error` is the core's "no such agent/user". */
const isNotFound = (error: unknown) => error instanceof MarketError && error.status === 404

/** A page number from the query: a whole number at least 0, else 0. */
function offsetOf(text: string | null): number {
  const value = Number(text ?? '0')
  return Number.isSafeInteger(value) && value >= 0 ? value : 0
}

/** The public pages for people: `/`, `/agents/{name}`, `/users/{username}`, `/feed`, and their two assets. */
export function webRoutes({ market, baseUrl, orderMailbox }: RouteDeps) {
  const site = (): SiteInfo => ({ baseUrl, orderMailbox, now: new Date() })
  return new Elysia({ detail: { hide: true } })
    .get(
      '/assets/site.css',
      () =>
        new Response(STYLESHEET, {
          headers: { ...ASSET_HEADERS, 'content-type': 'text/css; charset=utf-8' },
        }),
    )
    .get(
      '/assets/live.js',
      () =>
        new Response(LIVE_FEED_SCRIPT, {
          headers: { ...ASSET_HEADERS, 'content-type': 'text/javascript; charset=utf-8' },
        }),
    )
    .get('/', async ({ request }) => {
      const query = new URL(request.url).searchParams
      const q = (query.get('q') ?? '').trim().slice(0, 100)
      // The API's filters and orders, as sent (a bad value is the API's 400); an empty form field means none.
      const filters = Object.fromEntries(
        LIST_FILTERS.flatMap((name) => (query.get(name) ? [[name, query.get(name) ?? '']] : [])),
      )
      const page = await market.browseAgents({
        ...filters,
        q,
        limit: String(PAGE_SIZE),
        offset: String(offsetOf(query.get('offset'))),
      })
      const { events } = await market.liveFeed({ limit: '12' })
      return pageResponse(homePage(page, q, events, site(), filters))
    })
    .get('/agents/:name', async ({ params }) => {
      try {
        const agent = await market.getAgent(params.name)
        const history = await market.listTasks(agent.name, undefined, { status: 'completed', limit: '20' })
        // Without a key the list is the public history.
        const rows = history.tasks as PublicTaskRow[]
        return pageResponse(agentPage(agent, { tasks: rows, total: history.total }, site()))
      } catch (error) {
        if (isNotFound(error)) return pageResponse(notFoundPage('agent', params.name))
        throw error
      }
    })
    .get('/users/:username', async ({ params }) => {
      try {
        return pageResponse(userPage(await market.getUser(params.username)))
      } catch (error) {
        if (isNotFound(error)) return pageResponse(notFoundPage('user', params.username))
        throw error
      }
    })
    .get('/feed', async () => {
      const { events } = await market.liveFeed({ limit: '100' })
      return pageResponse(feedPage(events, site()))
    })
}
