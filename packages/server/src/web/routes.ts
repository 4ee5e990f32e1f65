import { MarketError, type PublicTaskRow } from '@agentmarket/core'
import { routeNotFound } from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import type { RouteDeps } from '../routes/deps.ts'
import { COPY_SCRIPT, FAVICON_SVG, LIVE_FEED_SCRIPT, STYLESHEET } from './assets.ts'
import { FEED_PAGE_SIZE, feedPage } from './feedPages.ts'
import { pageResponse } from './layout.ts'
import { agentPage, homePage, notFoundPage } from './pages.ts'
import type { SiteInfo } from './parts.ts'
import { userPage, usersPage } from './userPages.ts'

const ASSET_HEADERS = { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }
const PAGE_SIZE = '20'
/** Events read for the front page's sidebar, before heartbeats are folded into lines. */
const SIDEBAR_EVENTS = '50'

/** Whether `error` is the core's "no such agent/user". */
const isNotFound = (error: unknown) => error instanceof MarketError && error.status === 404

/** The core's answer, or its refusal of the query (a 400) for the page to show; anything else is thrown on. */
async function orRefusal<T>(read: Promise<T>): Promise<T | MarketError> {
  try {
    return await read
  } catch (error) {
    if (error instanceof MarketError && error.status === 400) return error
    throw error
  }
}

/**
 * The page's query as the core's list action reads it: every parameter passed on as sent (the action validates
 * them), but blank ones (a form's untouched fields mean "no filter") and the page size, which the page sets.
 */
function listQuery(query: URLSearchParams): Record<string, string> {
  const passed = Object.fromEntries([...query].filter(([name, value]) => value !== '' && name !== 'limit'))
  return { ...passed, limit: PAGE_SIZE }
}

/**
 * Whether a request takes a page: a browser's (Accept names text/html) or one that names no type (curl, a link
 * follower). A client asking only for JSON is an API client, and keeps the JSON it got there before.
 */
function wantsHtml(request: Request): boolean {
  const accept = request.headers.get('accept') ?? ''
  return accept.includes('text/html') || !accept.includes('json')
}

const asset = (body: string, type: string, maxAge = 3600) =>
  new Response(body, {
    headers: { ...ASSET_HEADERS, 'cache-control': `public, max-age=${maxAge}`, 'content-type': type },
  })

/** The site's icon: the same SVG at the address browsers ask for by themselves and at the one the pages name. */
function favicon() {
  return asset(FAVICON_SVG, 'image/svg+xml', 86_400)
}

/**
 * The public pages for people: `/`, `/agents/{name}`, `/users`, `/users/{username}`, `/feed`, the icon and the
 * assets. `/agents` and `/users` are pages unless the client asks only for JSON: it gets the 404 problem it always got
 * there (the API lives under /api).
 */
export function webRoutes({ market, baseUrl, orderMailbox }: RouteDeps) {
  const site = (): SiteInfo => ({ baseUrl, orderMailbox, now: new Date() })
  return new Elysia({ detail: { hide: true } })
    .get('/assets/site.css', () => asset(STYLESHEET, 'text/css; charset=utf-8'))
    .get('/assets/live.js', () => asset(LIVE_FEED_SCRIPT, 'text/javascript; charset=utf-8'))
    .get('/assets/copy.js', () => asset(COPY_SCRIPT, 'text/javascript; charset=utf-8'))
    .get('/favicon.ico', favicon)
    .get('/favicon.svg', favicon)
    .get('/', async ({ request }) => {
      const query = new URL(request.url).searchParams
      const [page, feed] = await Promise.all([
        orRefusal(market.browseAgents(listQuery(query))),
        market.liveFeed({ limit: SIDEBAR_EVENTS }),
      ])
      return pageResponse(homePage(page, query, feed.events, site()))
    })
    .get('/agents', ({ request }) => {
      if (!wantsHtml(request)) throw routeNotFound()
      return new Response(null, { status: 302, headers: { location: `/${new URL(request.url).search}` } })
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
    .get('/users', async ({ request }) => {
      if (!wantsHtml(request)) throw routeNotFound()
      const query = new URL(request.url).searchParams
      return pageResponse(usersPage(await orRefusal(market.listUsers(listQuery(query))), query))
    })
    .get('/users/:username', async ({ params }) => {
      try {
        return pageResponse(userPage(await market.getUser(params.username)))
      } catch (error) {
        if (isNotFound(error)) return pageResponse(notFoundPage('user', params.username))
        throw error
      }
    })
    .get('/feed', async ({ request }) => {
      const before = new URL(request.url).searchParams.get('before')
      const query = { limit: String(FEED_PAGE_SIZE), ...(before === null ? {} : { before }) }
      return pageResponse(feedPage(await orRefusal(market.liveFeed(query)), before, site()))
    })
}
