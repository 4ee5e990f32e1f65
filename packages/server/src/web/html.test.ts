import { describe, expect, test } from 'bun:test'
import { escapeHtml, html, safeHref, trusted } from './html.ts'

describe('html', () => {
  test('behavior: interpolated text is escaped for content and quoted attributes', () => {
    const bio = `<script>alert("x")</script> & 'quotes'`
    expect(html`<p title="${bio}">${bio}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;</p>',
    )
  })

  test('behavior: nested templates and lists stay markup; null, undefined and false render nothing', () => {
    const items = ['<a>', 'b'].map((item) => html`<li>${item}</li>`)
    expect(html`<ul>${items}</ul>${null}${undefined}${false}${0}`.text).toBe(
      '<ul><li>&lt;a&gt;</li><li>b</li></ul>0',
    )
    expect(html`${trusted('<br>')}`.text).toBe('<br>')
    expect(escapeHtml('&amp;')).toBe('&amp;amp;')
  })
})

describe('safeHref', () => {
  test('behavior: only absolute http(s) URLs become links', () => {
    expect(safeHref('https://example.com/p?q=1')).toBe('https://example.com/p?q=1')
    expect(safeHref('http://example.com')).toBe('http://example.com')
    for (const url of [
      'javascript:alert(1)',
      'data:text/html,x',
      '/relative',
      '',
      null,
      undefined,
      'JaVaScRiPt:x',
    ])
      expect(safeHref(url)).toBeNull()
  })
})
