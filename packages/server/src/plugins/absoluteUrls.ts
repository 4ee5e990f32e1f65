import { Elysia } from 'elysia'
import type { Handle } from './requestLog.ts'

/**
 * Gives every request an absolute URL. Bun hands a request without a usable Host (HTTP/1.0 without one, or a Host
 * such as `a/b`) a URL that is only its path, which `new URL()` refuses everywhere a route or the problem handler
 * reads it (a 500 page of Bun's instead of an answer). Such a request is resolved against the marketplace's own
 * base URL, as its links are; any other request goes on untouched, at the cost of one string test.
 */
export function absoluteUrls(baseUrl: string) {
  const resolved = (request: Request) => {
    const absolute = new Request(new URL(request.url, baseUrl), request)
    // Bun's router hands a matched route's parameters on the request itself; the copy carries them on.
    return Object.assign(absolute, { params: (request as Request & { params?: unknown }).params })
  }
  const wrapper = (handle: Handle) => (request: Request) =>
    request.url.startsWith('/') ? handle(resolved(request)) : handle(request)
  return new Elysia({ name: 'absolute-urls' }).wrap(wrapper as never)
}
