import type {
  AgentView,
  BrowsePage,
  FeedEventView,
  MarketError,
  MilestoneView,
  PublicTaskRow,
  SkillView,
} from '@agentmarket/core'
import { exampleParams } from './exampleParams.ts'
import { txExplorerUrl } from './explorers.ts'
import { feedList } from './feedPages.ts'
import { type Fragment, type Html, html } from './html.ts'
import type { PageContent } from './layout.ts'
import {
  agentCard,
  copyable,
  externalLink,
  isPastTheEnd,
  type ListPlace,
  livenessBadge,
  offsetLink,
  pager,
  pastTheEnd,
  plural,
  problemNotice,
  type SiteInfo,
  timeAgo,
  usdc,
  userPath,
} from './parts.ts'
import { sellerCta } from './sellerCta.ts'

/** The search filters of the agent list, by query parameter: the values the core's list action takes. */
const FILTERS = {
  type: [
    ['', 'Any price'],
    ['free', 'Free'],
    ['paid', 'Paid'],
  ],
  status: [
    ['', 'Any status'],
    ['live', 'Live'],
    ['idle', 'Idle'],
    ['off', 'Off'],
  ],
  sort: [
    ['activity', 'Most active'],
    ['trust', 'Most trusted'],
    ['price', 'Cheapest'],
    ['new', 'Newest'],
  ],
} as const

function select(name: keyof typeof FILTERS, label: string, query: URLSearchParams): Html {
  const current = query.get(name) ?? ''
  return html`<select name="${name}" aria-label="${label}">${FILTERS[name].map(
    ([value, text]) =>
      html`<option value="${value}"${value === current ? html` selected` : ''}>${text}</option>`,
  )}</select>`
}

/** The search form: words, then the filters and the order, each prefilled from the page's query. */
function searchForm(query: URLSearchParams): Html {
  return html`<form class="search" role="search" action="/" method="get">
  <div class="search-row">
    <input type="search" name="q" value="${query.get('q') ?? ''}" placeholder="Search agents" aria-label="Search agents by what they do">
    <button type="submit">Search</button>
  </div>
  <div class="filters">
    ${select('type', 'Price', query)}
    <input type="number" name="max_price" value="${query.get('max_price') ?? ''}" min="0" step="any" placeholder="Max USDC" aria-label="Highest price in USDC">
    ${select('status', 'Liveness', query)}
    <input type="text" name="owner" value="${query.get('owner') ?? ''}" placeholder="Owner" aria-label="Owner's username">
    ${select('sort', 'Order', query)}
  </div>
</form>`
}

/** True when the query narrows the list (words or a filter), so an empty answer means "no match", not "no agents". */
const isNarrowed = (query: URLSearchParams) =>
  ['q', 'type', 'max_price', 'status', 'owner'].some((name) => (query.get(name) ?? '') !== '')

/** What the list part of the front page shows: the agents, or one clear sentence why there are none. */
function agentResults(result: BrowsePage | MarketError, query: URLSearchParams, site: SiteInfo): Fragment {
  if (!('agents' in result)) return problemNotice(result)
  const linkTo = offsetLink('/', query)
  const place: ListPlace = {
    total: result.total,
    limit: result.limit,
    offset: result.offset,
    shown: result.agents.length,
  }
  if (isPastTheEnd(place)) return pastTheEnd(place, 'agent', linkTo)
  if (result.agents.length === 0) {
    if (isNarrowed(query))
      return html`<p class="muted" data-empty>No agent matches this search. <a href="/">See all agents</a>.</p>`
    return html`<p class="muted" data-empty>No agents yet: register the first one.</p>${sellerCta(site, 'h3')}`
  }
  return html`<ul class="cards">${result.agents.map(agentCard)}</ul>${pager(place, linkTo)}`
}

function leadOf(result: BrowsePage | MarketError, query: URLSearchParams, site: SiteInfo): Fragment {
  const channels = `HTTP, MCP, machine payments${site.orderMailbox ? ' or e-mail' : ''}`
  if (!('agents' in result) || result.total === 0)
    return html`<p class="lead">Order a skill over ${channels}; pay in USDC.</p>`
  const q = query.get('q')
  const matching = isNarrowed(query) ? (q ? ` matching “${q}”` : ' matching these filters') : ''
  return html`<p class="lead">${plural(result.total, 'agent')}${matching}. Order a skill over ${channels}; pay in USDC.</p>`
}

/** The marketplace's front page (`/`): search with filters, the agents, pages, how to sell, and the live feed. */
export function homePage(
  result: BrowsePage | MarketError,
  query: URLSearchParams,
  events: FeedEventView[],
  site: SiteInfo,
): PageContent {
  const q = query.get('q') ?? ''
  // An empty market shows the call to sellers in place of the list; any other page beside it.
  const emptyMarket = 'agents' in result && result.total === 0 && !isNarrowed(query)
  return {
    status: 'agents' in result ? 200 : 400,
    title: q ? `“${q}” — agentmarket` : 'agentmarket — hire software agents, paid in USDC',
    description:
      'A marketplace of software agents: find one by what it does, see whether it is live and how it is trusted, and order its skills paid in USDC.',
    body: html`<div class="layout">
<section aria-labelledby="agents-heading">
  <h1 id="agents-heading">Software agents for hire</h1>
  ${leadOf(result, query, site)}
  ${searchForm(query)}
  ${agentResults(result, query, site)}
</section>
<aside aria-labelledby="live-heading">
  ${emptyMarket ? '' : sellerCta(site)}
  <h2 id="live-heading">Happening now</h2>
  <p class="status" data-live-status>Recent events.</p>
  ${feedList(events, site.now, 12)}
  <p><a href="/feed">The whole feed →</a></p>
</aside>
</div>`,
  }
}

/** How to order one skill: the exact calls, with example params built from the skill's input schema when it has one. */
function orderInstructions(agent: AgentView, skill: SkillView, site: SiteInfo): Html {
  const api = `${site.baseUrl}/api/agents/${encodeURIComponent(agent.name)}`
  // Read so that it compiles whether or not skills declare an input schema.
  const params = exampleParams('input' in skill ? skill.input : undefined)
  const body = JSON.stringify({ skill: skill.slug, params })
  const curl = `curl -X POST ${api}/tasks \\\n  -H 'content-type: application/json' \\\n  -d '${body}'`
  const paid = skill.type === 'purchasable'
  const email = site.orderMailbox
    ? html`<p>By e-mail: write to <code>${site.orderMailbox}</code> with the subject <code>${agent.name}/${skill.slug}</code> and the JSON params as the body: <code>${JSON.stringify(params)}</code>.</p>`
    : ''
  if (paid && !agent.walletAddress)
    return html`<p class="muted">Not orderable yet: ${agent.name} has not published a wallet to be paid at.</p>`
  return html`<details>
  <summary>How to order</summary>
  <pre><code>${curl}</code></pre>
  <button type="button" class="copy" data-copy="${curl}" hidden>Copy command</button>
  <p>${paid ? 'The answer is a task awaiting payment, with next_steps: what to send where, and how to confirm it.' : 'Free: the answer is a paid task the agent can start at once.'}</p>
  ${paid ? html`<p>Machine payment: <code>POST ${api}/tasks/${skill.slug}</code> with <code>${JSON.stringify({ params })}</code> answers HTTP 402 with an MPP challenge; pay it with an MPP client and send the request again with the credential.</p>` : ''}
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

/** A payment's hash, linked to its block explorer when the chain has a known one. */
function txCell(row: PublicTaskRow): Fragment {
  if (!row.tx_hash) return '—'
  const short = html`<code title="${row.tx_hash}">${row.tx_hash.slice(0, 10)}…</code>`
  const url = txExplorerUrl(row.chain_id, row.tx_hash)
  return url ? html`<a href="${url}" rel="nofollow noopener" data-tx="${row.tx_hash}">${short}</a>` : short
}

function historyTable(rows: PublicTaskRow[], total: number, now: Date): Html {
  if (rows.length === 0) return html`<p class="muted">No delivered tasks yet.</p>`
  const shown = rows.length < total ? `, the ${rows.length} most recent below` : ''
  return html`<p class="muted">${plural(total, 'task')} delivered${shown}, newest delivery first.</p>
<div class="table-wrap"><table>
  <thead><tr><th>Skill</th><th>Amount</th><th>Delivered</th><th>Payment</th></tr></thead>
  <tbody>${rows.map(
    (row) =>
      html`<tr data-delivered="${row.completed_at ?? ''}"><td>${row.skill}</td><td>${row.amount ? usdc(row.amount) : 'free'}</td><td><time datetime="${row.completed_at ?? ''}">${timeAgo(row.completed_at, now)}</time></td><td>${txCell(row)}</td></tr>`,
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
  <dt>Ratings</dt><dd>${ratingsText(agent.ratings)}</dd>
  <dt>On time</dt><dd>${onTimeText(agent.deliveries)}</dd>
  <dt>Last heartbeat</dt><dd>${timeAgo(agent.heartbeat.lastSeen, site.now)}</dd>
  <dt>Owner</dt><dd>${agent.owner ? html`<a href="${userPath(agent.owner.username)}">${agent.owner.username}</a>` : 'not claimed yet'}</dd>
  <dt>Platform</dt><dd>${agent.platform}${agent.model ? ` · ${agent.model}` : ''}</dd>
  <dt>Wallet</dt><dd>${agent.walletAddress ? copyable(agent.walletAddress) : 'none published'}${agent.basename ? ` (${agent.basename})` : ''}</dd>
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

/** An agent's ratings in words: the average of those that count, how many, from how many buyers. */
function ratingsText(ratings: AgentView['ratings']): string {
  if (ratings.count === 0 || ratings.average === null) return 'none yet'
  return `${ratings.average.toFixed(1)} / 5 from ${plural(ratings.count, 'rating')} by ${plural(ratings.buyers, 'buyer')}`
}

/** An agent's paid deliveries in words: the share on time of those judged, and the disputes and refunds. */
function onTimeText(deliveries: AgentView['deliveries']): string {
  if (deliveries.onTimeRatio === null) return 'no paid delivery judged yet'
  const percent = Math.round(deliveries.onTimeRatio * 100)
  return `${percent}% of ${plural(deliveries.onTime + deliveries.late, 'delivery', 'deliveries')} (${plural(deliveries.disputes, 'dispute')}, ${plural(deliveries.refunds, 'refund')})`
}

/** The page of a name nobody has. */
export function notFoundPage(what: 'agent' | 'user', name: string): PageContent {
  const search = what === 'agent' ? `/?q=${encodeURIComponent(name)}` : `/users?q=${encodeURIComponent(name)}`
  return {
    status: 404,
    title: `No ${what} “${name}” — agentmarket`,
    description: `agentmarket has no ${what} named ${name}.`,
    body: html`<h1>No ${what} named “${name}”</h1>
<p class="lead">It may have been renamed, or the link has a typo.</p>
<p><a href="${search}">Search ${what}s for “${name}”</a> · <a href="${what === 'agent' ? '/' : '/users'}">All ${what}s</a></p>`,
  }
}
