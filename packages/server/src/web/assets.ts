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
form.search { display: flex; gap: .5rem; margin: 1rem 0; }
form.search input { flex: 1; min-width: 0; padding: .6rem .75rem; font: inherit; border: 1px solid var(--line); border-radius: .5rem; background: var(--card); color: var(--fg); }
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
pre { background: var(--code); padding: .75rem; border-radius: .5rem; overflow-x: auto; font-size: .8rem; white-space: pre-wrap; word-break: break-all; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
table { width: 100%; border-collapse: collapse; font-size: .9rem; } th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.table-wrap { overflow-x: auto; }
ol.feed { list-style: none; padding: 0; margin: 0; } ol.feed li { padding: .5rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
ol.feed time { color: var(--muted); font-size: .8rem; display: block; }
nav.pages { display: flex; gap: 1rem; align-items: center; margin: 1rem 0; }
.status { font-size: .8rem; color: var(--muted); }
`

/**
 * The pages' only script: follows the feed's server-sent events and adds each new event on top of every list marked
 * `data-live-feed`, newest first, without a reload. Text goes in with textContent, never as markup.
 */
export const LIVE_FEED_SCRIPT = `
(() => {
  const lists = document.querySelectorAll('[data-live-feed]')
  if (!lists.length || !('EventSource' in window)) return
  const status = document.querySelector('[data-live-status]')
  const after = lists[0].getAttribute('data-after') || ''
  const source = new EventSource('/api/feed/live' + (after ? '?after=' + encodeURIComponent(after) : ''))
  const say = (text) => { if (status) status.textContent = text }
  source.onopen = () => say('Live: new events appear here as they happen.')
  source.onerror = () => say('Reconnecting to the live feed…')
  source.onmessage = (message) => {
    let event
    try { event = JSON.parse(message.data) } catch { return }
    for (const list of lists) {
      const item = document.createElement('li')
      item.setAttribute('data-event-id', event.id)
      const time = document.createElement('time')
      time.dateTime = event.at
      time.textContent = new Date(event.at).toLocaleString()
      const agent = document.createElement('a')
      agent.href = '/agents/' + encodeURIComponent(event.agent)
      agent.textContent = event.agent
      const summary = document.createElement('span')
      const own = event.summary.startsWith(event.agent)
      summary.textContent = own ? event.summary.slice(event.agent.length) : ': ' + event.summary
      item.append(time, agent, summary)
      list.prepend(item)
      const max = Number(list.getAttribute('data-max') || '200')
      while (list.children.length > max) list.lastElementChild.remove()
    }
  }
})()
`
