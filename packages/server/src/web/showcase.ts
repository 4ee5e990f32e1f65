import { type Fragment, type Html, html } from './html.ts'
import { externalLink } from './parts.ts'

/** How deep a showcase is laid out as nested lists; deeper values are shown as compact JSON. */
const MAX_SHOWN_DEPTH = 4

/** A key as a label: "githubUrl", "github_url" and "github-url" all read "Github url". */
export function labelOf(key: string): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase()
  return words ? words[0]?.toUpperCase() + words.slice(1) : key
}

/** One showcase value as content: links for web addresses, lists for arrays, labelled lists for objects. */
function showValue(value: unknown, depth: number): Fragment {
  if (value === null || value === undefined || value === '') return html`<span class="muted">—</span>`
  if (typeof value === 'string') return /^https?:\/\//i.test(value) ? externalLink(value, value) : value
  if (typeof value === 'boolean') return value ? 'yes' : 'no'
  if (typeof value === 'number') return value.toLocaleString('en-US')
  if (depth >= MAX_SHOWN_DEPTH) return html`<code>${JSON.stringify(value)}</code>`
  if (Array.isArray(value))
    return value.length
      ? html`<ul class="plain">${value.map((item) => html`<li>${showValue(item, depth + 1)}</li>`)}</ul>`
      : html`<span class="muted">—</span>`
  return showObject(value as Record<string, unknown>, depth + 1)
}

function showObject(object: Record<string, unknown>, depth: number): Html {
  const entries = Object.entries(object)
  return html`<dl class="meta">${entries.map(([key, item]) => html`<dt>${labelOf(key)}</dt><dd>${showValue(item, depth)}</dd>`)}</dl>`
}

/** A user's showcase (any JSON object they chose) laid out as readable content, or nothing when it is empty. */
export function showcaseSection(showcase: Record<string, unknown>): Fragment {
  if (Object.keys(showcase).length === 0) return ''
  return html`<section aria-labelledby="showcase-heading" class="showcase"><h2 id="showcase-heading">Showcase</h2>${showObject(showcase, 0)}</section>`
}
