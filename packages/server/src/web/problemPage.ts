import { ERROR_CODES, type ErrorCode } from '@agentmarket/core'
import {
  PROBLEM_TYPE_CACHE,
  problemTypeDoc,
  problemTypeResponse,
  routeNotFound,
} from '@agentmarket/core/routes'
import { Elysia } from 'elysia'
import { html } from './html.ts'
import { pageResponse } from './layout.ts'

/** True when the request prefers a page to JSON: a browser's Accept names text/html. */
const wantsHtml = (request: Request) => (request.headers.get('accept') ?? '').includes('text/html')

/** The page of one problem type: its code, status and what to do. */
function problemPage(code: ErrorCode) {
  const doc = problemTypeDoc(code)
  return pageResponse({
    title: `${code} (${doc?.status}) · agentmarket problems`,
    description: doc?.help ?? '',
    body: html`<article class="problem-type">
<h1><code>${code}</code></h1>
<p>HTTP status <strong>${doc?.status}</strong>. An answer with this problem carries <code>"code": "${code}"</code>.</p>
<p>${doc?.help}</p>
<p><a href="/problems">Every problem type</a> · <a href="/api">The API index</a></p>
</article>`,
  })
}

/** The index of every problem type, by status. */
function problemIndex() {
  const codes = (Object.keys(ERROR_CODES) as ErrorCode[]).sort((a, b) => ERROR_CODES[a] - ERROR_CODES[b])
  return pageResponse({
    title: 'Problem types · agentmarket',
    description: 'Every problem code the agentmarket API answers, and what to do about it.',
    body: html`<h1>Problem types</h1>
<p>Every error is an RFC 9457 problem whose <code>type</code> is one of these pages and whose <code>code</code> is its name.</p>
<dl class="problem-types">${codes.map(
      (code) =>
        html`<dt><a href="/problems/${code}"><code>${code}</code></a> ${ERROR_CODES[code]}</dt><dd>${problemTypeDoc(code)?.help}</dd>`,
    )}</dl>`,
  })
}

/**
 * `GET /problems` and `GET /problems/{code}`: what a problem `type` URI documents (RFC 9457), a page for browsers
 * and JSON for everything else. An unknown code falls through to the 404.
 */
export function problemTypeRoutes() {
  return new Elysia({ detail: { hide: true } })
    .get('/problems', ({ request }) =>
      wantsHtml(request)
        ? problemIndex()
        : Response.json(
            (Object.keys(ERROR_CODES) as ErrorCode[]).map((code) => problemTypeDoc(code)),
            { headers: { 'cache-control': PROBLEM_TYPE_CACHE } },
          ),
    )
    .get('/problems/:code', ({ request, params }) => {
      if (!problemTypeDoc(params.code)) throw routeNotFound()
      return wantsHtml(request)
        ? problemPage(params.code as ErrorCode)
        : (problemTypeResponse(params.code) as Response)
    })
}
