import type { AgentSummary, MarketError } from '@agentmarket/core'
import { type Fragment, type Html, html, safeHref } from './html.ts'

/** What the pages know about the server they are served from. */
export type SiteInfo = { baseUrl: string; orderMailbox: string | null; now: Date }

const LIVENESS_TEXT = { live: 'live', idle: 'idle', off: 'off' } as const

/** "3 min ago", "2 h ago", "5 days ago". */
export function timeAgo(iso: string | null, now: Date): string {
  if (!iso) return 'never'
  const seconds = Math.max(0, Math.round((now.getTime() - new Date(iso).getTime()) / 1000))
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`
  const days = Math.floor(seconds / 86_400)
  return days === 1 ? 'yesterday' : `${days} days ago`
}

/** An amount of USDC as people read it: "1.5 USDC". */
export const usdc = (amount: number) => `${amount.toLocaleString('en-US', { maximumFractionDigits: 6 })} USDC`
/** The page of an agent. */
export const agentPath = (name: string) => `/agents/${encodeURIComponent(name)}`
/** The page of a user. */
export const userPath = (username: string) => `/users/${encodeURIComponent(username)}`
/** "1 skill", "3 skills". */
export const plural = (count: number, one: string, many = `${one}s`) =>
  `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`

/** The live/idle/off badge of an agent. */
export function livenessBadge(status: keyof typeof LIVENESS_TEXT): Html {
  return html`<span class="badge ${status}" title="heartbeat: ${status}">${LIVENESS_TEXT[status]}</span>`
}

/** A link that leaves the site, only for http(s) URLs; anything else stays plain text. */
export function externalLink(url: string | null, text: Fragment): Fragment {
  const href = safeHref(url)
  return href ? html`<a href="${href}" rel="nofollow noopener">${text}</a>` : text
}

/**
 * A value shown whole where it fits and shortened where it would not (a wallet, a hash): the full text stays in the
 * title and behind a Copy button (shown by the pages' script), so a phone never breaks it mid-word.
 */
export function copyable(text: string, shortened = `${text.slice(0, 6)}…${text.slice(-4)}`): Html {
  return html`<span class="copyable"><code class="full">${text}</code><code class="short" title="${text}">${shortened}</code><button type="button" class="copy" data-copy="${text}" hidden>Copy</button></span>`
}

/** One agent as a card of a list: liveness, trust, skills, cheapest price, owner. */
export function agentCard(agent: AgentSummary & { cheapestPrice?: number | null }): Html {
  const price =
    agent.cheapestPrice === undefined
      ? null
      : agent.cheapestPrice === null
        ? 'free skills only'
        : `from ${usdc(agent.cheapestPrice)}`
  return html`<li class="card" data-agent="${agent.name}">
  <h3><a href="${agentPath(agent.name)}">${agent.name}</a> ${livenessBadge(agent.heartbeat.status)}</h3>
  ${agent.bio ? html`<p class="bio">${agent.bio}</p>` : ''}
  <div class="facts">
    <span>Trust ${agent.trustScore}</span>
    <span>${plural(agent.skillCount, 'skill')}</span>
    ${price ? html`<span>${price}</span>` : ''}
    ${agent.model ? html`<span>${agent.model}</span>` : ''}
    ${agent.owner ? html`<span>owned by <a href="${userPath(agent.owner.username)}">${agent.owner.username}</a></span>` : ''}
  </div>
</li>`
}

/** A list page's place in its list, as the core answers it. */
export type ListPlace = { total: number; limit: number; offset: number; shown: number }

/** The offset of the last page of a list. */
export const lastPageOffset = ({ total, limit }: ListPlace) =>
  Math.max(0, Math.floor((total - 1) / limit) * limit)

/** True when a page starts past the end of a list that has rows: it shows nothing, and says so. */
export const isPastTheEnd = (place: ListPlace) => place.shown === 0 && place.total > 0 && place.offset > 0

/** Previous / "21–40 of 38" / next, with links made by `linkTo(offset)`. */
export function pager(place: ListPlace, linkTo: (offset: number) => string): Html {
  const { total, limit, offset, shown } = place
  if (total === 0 || shown === 0) return html``
  const previous = offset > 0 ? linkTo(Math.max(0, offset - limit)) : null
  const next = offset + shown < total ? linkTo(offset + limit) : null
  return html`<nav class="pages" aria-label="Pages">
  ${previous ? html`<a href="${previous}" rel="prev">← Previous</a>` : ''}
  <span class="muted">${(offset + 1).toLocaleString('en-US')}–${(offset + shown).toLocaleString('en-US')} of ${total.toLocaleString('en-US')}</span>
  ${next ? html`<a href="${next}" rel="next">Next →</a>` : ''}
</nav>`
}

/** What a page past the end of a list says instead of "nothing here": where the list ends, and a link back. */
export function pastTheEnd(place: ListPlace, what: string, linkTo: (offset: number) => string): Html {
  return html`<div class="notice" data-past-the-end>
  <p><strong>No more results.</strong> There are ${plural(place.total, what)}; this page starts after the last one.</p>
  <p><a href="${linkTo(lastPageOffset(place))}">← Back to the last page</a></p>
</div>`
}

/** A refused query (the core's 400) shown on the page: what is wrong and what to send instead. */
export function problemNotice(error: MarketError): Html {
  return html`<div class="notice problem" role="alert" data-problem="${error.code}">
  <p><strong>${error.title}:</strong> ${error.message}</p>
  ${error.errors?.length ? html`<ul>${error.errors.map((each) => html`<li><code>${each.pointer || '/'}</code> ${each.detail}</li>`)}</ul>` : ''}
</div>`
}

/** A list page's link for `offset`, keeping the page's other query parameters. */
export function offsetLink(path: string, query: URLSearchParams) {
  return (offset: number): string => {
    const params = new URLSearchParams(query)
    params.delete('offset')
    if (offset > 0) params.set('offset', String(offset))
    const text = params.toString()
    return text ? `${path}?${text}` : path
  }
}
