import { feedSummary } from './feedText.ts'

/** The one stylesheet of the pages: system fonts, readable on a phone, light and dark. */
export const STYLESHEET = `
:root { color-scheme: light dark; --bg: #fbfbfa; --fg: #1d1f23; --muted: #5d6470; --line: #e3e4e8; --card: #fff;
  --accent: #2155d6; --live: #14803c; --idle: #b26b00; --off: #8a8f98; --code: #f2f3f5; }
@media (prefers-color-scheme: dark) { :root { --bg: #121417; --fg: #e8eaed; --muted: #a0a6b0; --line: #2a2e35;
  --card: #1a1d22; --accent: #7ea6ff; --live: #4ccf7c; --idle: #f0b04a; --off: #7d838c; --code: #22262c; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--fg); }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
header.site, footer.site, main { max-width: 64rem; margin: 0 auto; padding: 0 1rem; }
header.site { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding-top: 1rem; padding-bottom: 1rem; border-bottom: 1px solid var(--line); }
header.site .brand { font-weight: 700; font-size: 1.15rem; color: var(--fg); }
header.site nav { display: flex; gap: 1rem; flex-wrap: wrap; }
footer.site { color: var(--muted); font-size: .875rem; padding-top: 2rem; padding-bottom: 2rem; }
h1 { font-size: 1.75rem; line-height: 1.2; margin: 1.5rem 0 .5rem; } h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; }
.lead { color: var(--muted); margin-top: 0; }
.layout { display: grid; gap: 2rem; grid-template-columns: minmax(0, 1fr); }
@media (min-width: 52rem) { .layout { grid-template-columns: minmax(0, 1fr) 18rem; } }
form.search { margin: 1rem 0; display: grid; gap: .5rem; }
.search-row { display: flex; gap: .5rem; }
form.search input, form.search select { min-width: 0; padding: .6rem .75rem; font: inherit; border: 1px solid var(--line); border-radius: .5rem; background: var(--card); color: var(--fg); }
.search-row input { flex: 1; }
.filters { display: grid; gap: .5rem; grid-template-columns: repeat(auto-fit, minmax(8.5rem, 1fr)); }
.filters input, .filters select { font-size: .9rem; padding: .45rem .6rem; width: 100%; }
button, .button { padding: .6rem 1rem; font: inherit; border: 0; border-radius: .5rem; background: var(--accent); color: #fff; cursor: pointer; }
ul.cards { list-style: none; padding: 0; margin: 0; display: grid; gap: .75rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .75rem; padding: .9rem 1rem; }
.card h3 { margin: 0; font-size: 1.05rem; display: flex; align-items: center; gap: .5rem; flex-wrap: wrap; }
.card p { margin: .35rem 0 0; }
.facts { display: flex; flex-wrap: wrap; gap: .25rem 1rem; color: var(--muted); font-size: .875rem; margin-top: .5rem; }
.bio { overflow-wrap: anywhere; }
.badge { display: inline-block; font-size: .75rem; font-weight: 600; padding: .05rem .5rem; border-radius: 999px; border: 1px solid currentColor; }
.badge.live { color: var(--live); } .badge.idle { color: var(--idle); } .badge.off { color: var(--off); }
.badge.verified { color: var(--live); } .badge.claimed { color: var(--muted); } .badge.paid { color: var(--accent); }
.muted { color: var(--muted); }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 1rem 0; }
dl.meta dt { color: var(--muted); } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--code); padding: .75rem; border-radius: .5rem; overflow-x: auto; font-size: .8rem; white-space: pre-wrap; overflow-wrap: anywhere; user-select: all; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
p code, li code, dd code, td code { overflow-wrap: anywhere; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; } th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.table-wrap { overflow-x: auto; }
ol.feed { list-style: none; padding: 0; margin: 0; } ol.feed li { padding: .5rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ol.feed time { color: var(--muted); font-size: .8rem; display: block; }
nav.pages { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: 1rem 0; }
.notice { border: 1px solid var(--line); border-left: 4px solid var(--accent); background: var(--card); border-radius: .5rem; padding: .5rem 1rem; margin: 1rem 0; }
.notice.problem { border-left-color: var(--idle); }
.notice p { margin: .4rem 0; }
.cta { background: var(--card); border: 1px solid var(--line); border-radius: .75rem; padding: .25rem 1rem .75rem; margin: 1.5rem 0 1rem; }
.cta h2, .cta h3 { margin: .75rem 0 .25rem; font-size: 1.05rem; }
.cta p { font-size: .9rem; }
button.copy { padding: .3rem .7rem; font-size: .8rem; }
.copyable { display: inline-flex; align-items: center; gap: .5rem; max-width: 100%; }
.copyable .short { display: none; }
@media (max-width: 40rem) { .copyable .full { display: none; } .copyable .short { display: inline; } }
ol.feed details summary { cursor: pointer; }
ol.feed details p { margin: .25rem 0 0; }
ul.plain { margin: 0; padding-left: 1.1rem; }
.showcase dl.meta dl.meta { margin: .25rem 0; }
.status { font-size: .8rem; color: var(--muted); }
`

/** The site's icon: a white "a" on the accent blue, readable at 16 px. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#2155d6"/><path d="M20 46 32 16l12 30M24.5 36h15" fill="none" stroke="#fff" stroke-width="6" stroke-linecap="round" stroke-linejoin="round"/></svg>`

/**
 * The pages' feed script: follows the feed's server-sent events and adds each new event on top of every list marked
 * `data-live-feed`, newest first, without a reload, in the words the server uses (`feedSummary`'s own source) and with
 * agents coming online folded into one line. Text goes in with textContent, never as markup.
 */
export const LIVE_FEED_SCRIPT = `
(() => {
  const lists = document.querySelectorAll('[data-live-feed]')
  if (!lists.length || !('EventSource' in window)) return
  const feedSummary = ${feedSummary.toString()}
  const status = document.querySelector('[data-live-status]')
  const after = lists[0].getAttribute('data-after') || ''
  const source = new EventSource('/api/feed/live' + (after ? '?after=' + encodeURIComponent(after) : ''))
  const say = (text) => { if (status) status.textContent = text }
  const link = (path, name, online) => {
    const anchor = document.createElement('a')
    anchor.href = path + encodeURIComponent(name)
    anchor.textContent = name
    if (online) anchor.setAttribute('data-online-agent', '')
    return anchor
  }
  const line = (event) => {
    const item = document.createElement('li')
    item.setAttribute('data-event-id', event.id)
    item.setAttribute('data-kind', event.kind)
    const time = document.createElement('time')
    time.dateTime = event.at
    time.textContent = 'just now'
    item.append(time)
    return item
  }
  const online = (event, agents) => {
    const item = line(event)
    if (agents.length === 1) {
      const text = document.createElement('span')
      text.append(link('/agents/', agents[0], true), ' came online')
      item.append(text)
      return item
    }
    const details = document.createElement('details')
    const summary = document.createElement('summary')
    summary.textContent = agents.length + ' agents came online'
    const names = document.createElement('p')
    agents.forEach((name, index) => names.append(index ? ', ' : '', link('/agents/', name, true)))
    details.append(summary, names)
    item.append(details)
    return item
  }
  const described = (event) => {
    const item = line(event)
    const text = document.createElement('span')
    for (const part of feedSummary(event)) {
      if (typeof part === 'string') text.append(part)
      else if ('agent' in part) text.append(link('/agents/', part.agent))
      else text.append(link('/users/', part.user))
    }
    item.append(text)
    return item
  }
  source.onopen = () => say('Live: new events appear here as they happen.')
  source.onerror = () => say('Reconnecting to the live feed…')
  source.onmessage = (message) => {
    let event
    try { event = JSON.parse(message.data) } catch { return }
    for (const list of lists) {
      const top = list.firstElementChild
      if (event.kind === 'agent.online' && top && top.getAttribute('data-kind') === 'agent.online') {
        const agents = [...top.querySelectorAll('[data-online-agent]')].map((anchor) => anchor.textContent)
        top.replaceWith(online(event, agents.includes(event.agent) ? agents : [event.agent, ...agents]))
        continue
      }
      list.prepend(event.kind === 'agent.online' ? online(event, [event.agent]) : described(event))
      const max = Number(list.getAttribute('data-max') || '200')
      while (list.children.length > max) list.lastElementChild.remove()
    }
  }
})()
`

/**
 * The pages' copy buttons: each `button.copy` (hidden without this script) copies its `data-copy` text to the
 * clipboard, or selects the command beside it where the clipboard is not allowed.
 */
export const COPY_SCRIPT = `
(() => {
  for (const button of document.querySelectorAll('button.copy[data-copy]')) {
    button.hidden = false
    const label = button.textContent
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(button.getAttribute('data-copy') || '')
        button.textContent = 'Copied'
      } catch {
        const code = button.parentElement && button.parentElement.querySelector('pre, code')
        if (code) window.getSelection().selectAllChildren(code)
        button.textContent = 'Selected: press Ctrl+C'
      }
      setTimeout(() => { button.textContent = label }, 2000)
    })
  }
})()
`
