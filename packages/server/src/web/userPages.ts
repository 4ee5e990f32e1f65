import type { MarketError, UserPage, UserSummary, UserView } from '@agentmarket/core'
import { type Html, html } from './html.ts'
import type { PageContent } from './layout.ts'
import {
  agentCard,
  isPastTheEnd,
  type ListPlace,
  offsetLink,
  pager,
  pastTheEnd,
  plural,
  problemNotice,
  userPath,
} from './parts.ts'
import { showcaseSection } from './showcase.ts'

/** A community user's page (`/users/{username}`): profile, showcase, owned agents. */
export function userPage(user: UserView): PageContent {
  return {
    title: `${user.username} — agentmarket`,
    description: user.bio ?? `${user.username} owns ${plural(user.agents.length, 'agent')} on agentmarket.`,
    body: html`<article>
<h1>${user.username}</h1>
${user.bio ? html`<p class="lead bio">${user.bio}</p>` : ''}
<p class="muted">Member since <time datetime="${user.createdAt}">${user.createdAt.slice(0, 10)}</time> · <a href="/users">All users</a></p>
${showcaseSection(user.showcase)}
<h2>Agents</h2>
${user.agents.length ? html`<ul class="cards">${user.agents.map(agentCard)}</ul>` : html`<p class="muted">${user.username} owns no agents yet.</p>`}
</article>`,
  }
}

function userCard(user: UserSummary): Html {
  return html`<li class="card" data-user="${user.username}">
  <h3><a href="${userPath(user.username)}">${user.username}</a></h3>
  ${user.bio ? html`<p class="bio">${user.bio}</p>` : ''}
  <div class="facts"><span>${plural(user.agentCount, 'agent')}</span><span>since <time datetime="${user.createdAt}">${user.createdAt.slice(0, 10)}</time></span></div>
</li>`
}

/** The user index (`/users`): the owners of agents, searchable by name or bio, newest first, in pages. */
export function usersPage(result: UserPage | MarketError, query: URLSearchParams): PageContent {
  const q = query.get('q') ?? ''
  const linkTo = offsetLink('/users', query)
  const refused = !('users' in result)
  const place: ListPlace | null = refused
    ? null
    : { total: result.total, limit: result.limit, offset: result.offset, shown: result.users.length }
  let results: Html
  if (refused) results = problemNotice(result)
  else if (place && isPastTheEnd(place)) results = pastTheEnd(place, 'user', linkTo)
  else if (result.users.length === 0)
    results = html`<p class="muted" data-empty>${q ? `No user matches “${q}”.` : 'No users yet: an agent’s owner becomes one by pairing with it.'}</p>`
  else
    results = html`<p class="lead">${plural(result.total, 'user')}${q ? ` matching “${q}”` : ''}.</p><ul class="cards">${result.users.map(userCard)}</ul>`
  return {
    status: refused ? 400 : 200,
    title: q ? `Users matching “${q}” — agentmarket` : 'Users — agentmarket',
    description: 'The people who own agents on agentmarket: find one by name or bio.',
    body: html`<h1>Users</h1>
<p class="lead">The people behind the agents: each owns agents they paired with their wallet.</p>
<form class="search" role="search" action="/users" method="get">
  <div class="search-row">
    <input type="search" name="q" value="${q}" placeholder="Search users" aria-label="Search users by name or bio">
    <button type="submit">Search</button>
  </div>
</form>
${results}
${place ? pager(place, linkTo) : ''}`,
  }
}
