/** Markup that is already safe to send: built by `html` (which escapes what it interpolates) or by `trusted`. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

/** What `html` interpolates: markup as is, text escaped, lists joined, nothing for null/undefined/false. */
export type Fragment = Html | string | number | null | undefined | false | readonly Fragment[]

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/** Text made safe for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char)
}

function render(fragment: Fragment): string {
  if (fragment instanceof Html) return fragment.text
  if (Array.isArray(fragment)) return fragment.map(render).join('')
  if (fragment === null || fragment === undefined || fragment === false) return ''
  return escapeHtml(String(fragment))
}

/**
 * A template of markup in which every interpolated value is escaped unless it is itself `Html`: user text can never
 * become markup by forgetting to escape it.
 * @example html`<p title="${bio}">${name}</p>`
 */
export function html(strings: TemplateStringsArray, ...values: Fragment[]): Html {
  let text = strings[0] ?? ''
  values.forEach((value, index) => {
    text += render(value) + (strings[index + 1] ?? '')
  })
  return new Html(text)
}

/** Markup written in this code base (never user input), passed through unescaped. */
export function trusted(markup: string): Html {
  return new Html(markup)
}

/** An http(s) URL for an href, or null for anything else (javascript:, data:, relative tricks). */
export function safeHref(url: string | null | undefined): string | null {
  if (!url || !URL.canParse(url)) return null
  return ['http:', 'https:'].includes(new URL(url).protocol) ? url : null
}
