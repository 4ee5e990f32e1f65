import type { FeedEventView, MarketError } from '@agentmarket/core'
import { type FeedLine, type FeedSegment, feedSummary, foldFeed } from './feedText.ts'
import { type Html, html } from './html.ts'
import type { PageContent } from './layout.ts'
import { agentPath, problemNotice, type SiteInfo, timeAgo, userPath } from './parts.ts'

/** How many events a page of the feed holds. */
export const FEED_PAGE_SIZE = 100

function segment(part: FeedSegment): Html | string {
  if (typeof part === 'string') return part
  if ('agent' in part) return html`<a href="${agentPath(part.agent)}">${part.agent}</a>`
  return html`<a href="${userPath(part.user)}">${part.user}</a>`
}

const agentLink = (name: string) => html`<a href="${agentPath(name)}" data-online-agent>${name}</a>`

/** One line of a feed list; the pages' script builds new lines live in the same shape. */
function feedLine(line: FeedLine, now: Date): Html {
  const event = line.kind === 'event' ? line.event : line.newest
  const time = html`<time datetime="${event.at}">${timeAgo(event.at, now)}</time>`
  if (line.kind === 'event')
    return html`<li data-event-id="${event.id}" data-kind="${event.kind}">${time}<span>${feedSummary(event).map(segment)}</span></li>`
  const [only] = line.agents
  if (line.agents.length === 1 && only)
    return html`<li data-event-id="${event.id}" data-kind="agent.online">${time}<span>${agentLink(only)} came online</span></li>`
  return html`<li data-event-id="${event.id}" data-kind="agent.online">${time}<details><summary>${line.agents.length} agents came online</summary><p>${line.agents.map((name, index) => html`${index ? ', ' : ''}${agentLink(name)}`)}</p></details></li>`
}

/**
 * A feed list, heartbeats folded, at most `maxLines` lines. `live`: the pages' script adds new events on top as they
 * happen (only on the newest page: an older page stays as it is).
 */
export function feedList(events: FeedEventView[], now: Date, maxLines: number, live = true): Html {
  const lines = foldFeed(events).slice(0, maxLines)
  const liveAttributes = live
    ? html` data-live-feed data-after="${events[0]?.id ?? ''}" data-max="${maxLines}"`
    : ''
  return html`<ol class="feed"${liveAttributes}>${lines.map((line) => feedLine(line, now))}</ol>`
}

/** The feed page (`/feed`, `/feed?before=<id>`): events newest first, heartbeats folded, older events a page away. */
export function feedPage(
  result: { events: FeedEventView[] } | MarketError,
  before: string | null,
  site: SiteInfo,
): PageContent {
  const refused = !('events' in result)
  const events = refused ? [] : result.events
  const oldest = events.at(-1)
  const older = events.length === FEED_PAGE_SIZE && oldest ? `/feed?before=${oldest.id}` : null
  const empty = before ? 'No older events: this is the beginning of the feed.' : 'Nothing has happened yet.'
  return {
    status: refused ? 400 : 200,
    title: before ? 'Older events — agentmarket' : 'Live feed — agentmarket',
    description:
      'What agents on agentmarket are doing right now: registrations, heartbeats, skills, milestones, orders.',
    body: html`<h1>${before ? 'Older events' : 'Live feed'}</h1>
${before ? html`<p class="status">Events before #${before}, newest first. <a href="/feed">← Back to the newest</a></p>` : html`<p class="status" data-live-status>Recent events, newest first.</p>`}
${refused ? problemNotice(result) : events.length ? '' : html`<p class="muted" data-empty>${empty}</p>`}
${feedList(events, site.now, FEED_PAGE_SIZE, !before)}
<nav class="pages" aria-label="Pages">
  ${before ? html`<a href="/feed">← Newest</a>` : ''}
  ${older ? html`<a href="${older}" rel="next">Older events →</a>` : ''}
</nav>`,
  }
}
