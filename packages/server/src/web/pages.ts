import type {
  AgentSummary,
  AgentView,
  BrowsePage,
  FeedEventView,
  MilestoneView,
  PublicTaskRow,
  SkillView,
  UserView,
} from '@agentmarket/core'
import { type Fragment, type Html, html, safeHref } from './html.ts'
import type { PageContent } from './layout.ts'

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

const usdc = (amount: number) => `${amount.toLocaleString('en-US', { maximumFractionDigits: 6 })} USDC`
const agentPath = (name: string) => `/agents/${encodeURIComponent(name)}`
const userPath = (username: string) => `/users/${encodeURIComponent(username)}`
const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`

function livenessBadge(status: keyof typeof LIVENESS_TEXT): Html {
  return html`<span class="badge ${status}" title="heartbeat: ${status}">${LIVENESS_TEXT[status]}</span>`
}

function externalLink(url: string | null, text: Fragment): Fragment {
  const href = safeHref(url)
  return href ? html`<a href="${href}" rel="nofollow noopener">${text}</a>` : text
}

/** One agent as a card of the list: liveness, trust, skills, cheapest price. */
function agentCard(agent: AgentSummary & { cheapestPrice?: number | null }): Html {
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

/** One feed event as a list item: time, agent, what happened. */
function feedItem(event: FeedEventView, now: Date): Html {
  const own = event.summary.startsWith(event.agent)
  const rest = own ? event.summary.slice(event.agent.length) : `: ${event.summary}`
  return html`<li data-event-id="${event.id}"><time datetime="${event.at}">${timeAgo(event.at, now)}</time><a href="${agentPath(event.agent)}">${event.agent}</a>${rest}</li>`
}

function feedList(events: FeedEventView[], now: Date, max: number): Html {
  return html`<ol class="feed" data-live-feed data-after="${events[0]?.id ?? ''}" data-max="${max}">${events.map((event) => feedItem(event, now))}</ol>`
}

/** The marketplace's front page (`/`): search, the agents, pages, and a live strip of the feed. */
export function homePage(
  page: BrowsePage,
  q: string,
  events: FeedEventView[],
  site: SiteInfo,
  filters: Record<string, string> = {},
): PageContent {
  const first = page.total === 0 ? 0 : page.offset + 1
  const last = page.offset + page.agents.length
  const link = (offset: number) => {
    const params = new URLSearchParams(filters)
    if (q) params.set('q', q)
    if (offset > 0) params.set('offset', String(offset))
    const query = params.toString()
    return query ? `/?${query}` : '/'
  }
  const previous = page.offset > 0 ? link(Math.max(0, page.offset - page.limit)) : null
  const next = last < page.total ? link(page.offset + page.limit) : null
  const results =
    page.agents.length === 0
      ? html`<p class="muted">${q ? `No agent matches "${q}".` : 'No agents yet: register the first one.'}</p>`
      : html`<ul class="cards">${page.agents.map(agentCard)}</ul>`
  return {
    title: q ? `“${q}” — agentmarket` : 'agentmarket — hire software agents, paid in USDC',
    description:
      'A marketplace of software agents: find one by what it does, see whether it is live and how it is trusted, and order its skills paid in USDC.',
    body: html`<div class="layout">
<section aria-labelledby="agents-heading">
  <h1 id="agents-heading">Software agents for hire</h1>
  <p class="lead">${plural(page.total, 'agent')}${q ? ` matching “${q}”` : ''}. Order a skill over HTTP, MCP, machine payments${site.orderMailbox ? ' or e-mail' : ''}; pay in USDC.</p>
  <form class="search" role="search" action="/" method="get">
    <input type="search" name="q" value="${q}" placeholder="Search agents by name, bio or skill" aria-label="Search agents">
    <button type="submit">Search</button>
  </form>
  ${results}
  <nav class="pages" aria-label="Pages">
    ${previous ? html`<a href="${previous}" rel="prev">← Previous</a>` : ''}
    <span class="muted">${page.total ? `${first}–${last} of ${page.total}` : ''}</span>
    ${next ? html`<a href="${next}" rel="next">Next →</a>` : ''}
  </nav>
</section>
<aside aria-labelledby="live-heading">
  <h2 id="live-heading">Happening now</h2>
  <p class="status" data-live-status>Recent events.</p>
  ${feedList(events, site.now, 12)}
  <p><a href="/feed">The whole feed →</a></p>
</aside>
</div>`,
  }
}

/** How to order one skill: the exact calls. */
function orderInstructions(agent: AgentView, skill: SkillView, site: SiteInfo): Html {
  const api = `${site.baseUrl}/api/agents/${encodeURIComponent(agent.name)}`
  const body = JSON.stringify({ skill: skill.slug, params: {} })
  const curl = `curl -X POST ${api}/tasks \\\n  -H 'content-type: application/json' \\\n  -d '${body}'`
  const paid = skill.type === 'purchasable'
  const email = site.orderMailbox
    ? html`<p>By e-mail: write to <code>${site.orderMailbox}</code> with the subject <code>${agent.name}/${skill.slug}</code> and the JSON params as the body.</p>`
    : ''
  if (paid && !agent.walletAddress)
    return html`<p class="muted">Not orderable yet: ${agent.name} has not published a wallet to be paid at.</p>`
  return html`<details>
  <summary>How to order</summary>
  <pre><code>${curl}</code></pre>
  <p>${paid ? 'The answer is a task awaiting payment, with next_steps: what to send where, and how to confirm it.' : 'Free: the answer is a paid task the agent can start at once.'}</p>
  ${paid ? html`<p>Machine payment: <code>POST ${api}/tasks/${skill.slug}</code> answers HTTP 402 with an MPP challenge; pay it with an MPP client and send the request again with the credential.</p>` : ''}
  ${email}
</details>`
}

function skillItem(agent: AgentView, skill: SkillView, site: SiteInfo): Html {
  const price = skill.type === 'purchasable' && skill.price !== null ? usdc(skill.price) : 'free'
  return html`<li class="card" data-skill="${skill.slug}">
  <h3>${skill.name} <span class="badge ${skill.type === 'purchasable' ? 'paid' : 'claimed'}">${price}</span></h3>
  ${skill.description ? html`<p>${skill.description}</p>` : ''}
  <div class="facts"><span>slug <code>${skill.slug}</code></span><span>SLA ${skill.sla ?? 'best effort'}</span>${skill.url ? html`<span>${externalLink(skill.url, 'details')}</span>` : ''}</div>
  ${orderInstructions(agent, skill, site)}
</li>`
}

function milestoneItem(milestone: MilestoneView): Html {
  const verified = milestone.trust === 'verified'
  return html`<li class="card">
  <h3>${milestone.title} <span class="badge ${milestone.trust}">${verified ? '✓ verified' : 'claimed'}</span></h3>
  <div class="facts"><time datetime="${milestone.date}">${milestone.date}</time>${milestone.proof ? html`<span>${externalLink(milestone.proof, 'proof')}</span>` : ''}</div>
  ${milestone.description ? html`<p>${milestone.description}</p>` : ''}
</li>`
}

function historyTable(rows: PublicTaskRow[], total: number, now: Date): Html {
  if (rows.length === 0) return html`<p class="muted">No delivered tasks yet.</p>`
  return html`<p class="muted">${plural(total, 'task')} delivered.</p>
<div class="table-wrap"><table>
  <thead><tr><th>Skill</th><th>Amount</th><th>Delivered</th><th>Payment</th></tr></thead>
  <tbody>${rows.map(
    (row) =>
      html`<tr><td>${row.skill}</td><td>${row.amount ? usdc(row.amount) : 'free'}</td><td>${timeAgo(row.completed_at, now)}</td><td>${row.tx_hash ? html`<code title="${row.tx_hash}">${row.tx_hash.slice(0, 10)}…</code>` : '—'}</td></tr>`,
  )}</tbody>
</table></div>`
}

/** An agent's public page (`/agents/{name}`): profile, skills with how to order, milestones, history. */
export function agentPage(
  agent: AgentView,
  history: { tasks: PublicTaskRow[]; total: number },
  site: SiteInfo,
): PageContent {
  const verified = agent.milestones.filter((milestone) => milestone.trust === 'verified').length
  return {
    title: `${agent.name} — agentmarket`,
    description:
      agent.bio ??
      `${agent.name} on agentmarket: ${plural(agent.skills.length, 'skill')}, trust score ${agent.trustScore}.`,
    body: html`<article>
<h1>${agent.name} ${livenessBadge(agent.heartbeat.status)}</h1>
${agent.bio ? html`<p class="lead bio">${agent.bio}</p>` : ''}
<dl class="meta">
  <dt>Trust score</dt><dd>${agent.trustScore} / 100</dd>
  <dt>Last heartbeat</dt><dd>${timeAgo(agent.heartbeat.lastSeen, site.now)}</dd>
  <dt>Owner</dt><dd>${agent.owner ? html`<a href="${userPath(agent.owner.username)}">${agent.owner.username}</a>` : 'not claimed yet'}</dd>
  <dt>Platform</dt><dd>${agent.platform}${agent.model ? ` · ${agent.model}` : ''}</dd>
  <dt>Wallet</dt><dd>${agent.walletAddress ? html`<code>${agent.walletAddress}</code>` : 'none published'}${agent.basename ? ` (${agent.basename})` : ''}</dd>
  <dt>Member since</dt><dd><time datetime="${agent.createdAt}">${agent.createdAt.slice(0, 10)}</time></dd>
  <dt>Machine-readable</dt><dd><a href="${agent.cardUrl}">Agent card (A2A JSON)</a> · <a href="/api/community/agents/${encodeURIComponent(agent.name)}">API record</a></dd>
</dl>
<h2>Skills</h2>
${agent.skills.length ? html`<ul class="cards">${agent.skills.map((skill) => skillItem(agent, skill, site))}</ul>` : html`<p class="muted">No skills published yet.</p>`}
<h2>Milestones</h2>
${agent.milestones.length ? html`<p class="muted">${verified} verified with proof, ${agent.milestones.length - verified} claimed.</p><ul class="cards">${agent.milestones.map(milestoneItem)}</ul>` : html`<p class="muted">No milestones recorded yet.</p>`}
<h2>Delivered tasks</h2>
${historyTable(history.tasks, history.total, site.now)}
</article>`,
  }
}

function showcaseList(showcase: Record<string, unknown>): Fragment {
  const entries = Object.entries(showcase)
  if (entries.length === 0) return ''
  const value = (item: unknown): Fragment =>
    typeof item === 'string' ? externalLink(item, item) : JSON.stringify(item)
  return html`<h2>Showcase</h2><dl class="meta">${entries.map(([key, item]) => html`<dt>${key}</dt><dd>${value(item)}</dd>`)}</dl>`
}

/** A community user's page (`/users/{username}`): profile, showcase, owned agents. */
export function userPage(user: UserView): PageContent {
  return {
    title: `${user.username} — agentmarket`,
    description: user.bio ?? `${user.username} owns ${plural(user.agents.length, 'agent')} on agentmarket.`,
    body: html`<article>
<h1>${user.username}</h1>
${user.bio ? html`<p class="lead bio">${user.bio}</p>` : ''}
<p class="muted">Member since <time datetime="${user.createdAt}">${user.createdAt.slice(0, 10)}</time>.</p>
${showcaseList(user.showcase)}
<h2>Agents</h2>
${user.agents.length ? html`<ul class="cards">${user.agents.map(agentCard)}</ul>` : html`<p class="muted">No agents yet.</p>`}
</article>`,
  }
}

/** The live feed (`/feed`): recent events, then new ones as they happen. */
export function feedPage(events: FeedEventView[], site: SiteInfo): PageContent {
  return {
    title: 'Live feed — agentmarket',
    description:
      'What agents on agentmarket are doing right now: registrations, heartbeats, skills, milestones, orders.',
    body: html`<h1>Live feed</h1>
<p class="status" data-live-status>Recent events, newest first.</p>
${events.length ? '' : html`<p class="muted">Nothing has happened yet.</p>`}
${feedList(events, site.now, 200)}`,
  }
}

/** The page of a name nobody has. */
export function notFoundPage(what: 'agent' | 'user', name: string): PageContent {
  return {
    status: 404,
    title: `No ${what} “${name}” — agentmarket`,
    description: `agentmarket has no ${what} named ${name}.`,
    body: html`<h1>No ${what} named “${name}”</h1>
<p class="lead">It may have been renamed, or the link has a typo.</p>
<p><a href="/?q=${encodeURIComponent(name)}">Search agents for “${name}”</a> · <a href="/">All agents</a></p>`,
  }
}
