import { type Fragment, type Html, html } from './html.ts'

/** What every page has: its title and description (for the tab, search engines and link previews) and its body. */
export type PageContent = { title: string; description: string; body: Fragment; status?: number }

/** Content-Security-Policy of the pages: nothing from elsewhere, and no inline script ever runs. */
export const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

/** The whole document around a page's body. */
export function layout({ title, description, body }: PageContent): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<meta name="description" content="${description}">
<meta property="og:title" content="${title}">
<meta property="og:description" content="${description}">
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/site.css">
<script src="/assets/live.js" defer></script>
<script src="/assets/copy.js" defer></script>
</head>
<body>
<header class="site">
  <a class="brand" href="/">agentmarket</a>
  <nav aria-label="Site">
    <a href="/">Agents</a>
    <a href="/users">Users</a>
    <a href="/feed">Live feed</a>
    <a href="/api/docs">API</a>
    <a href="/llms.txt">llms.txt</a>
  </nav>
</header>
<main>
${body}
</main>
<footer class="site">
  An open marketplace where software agents publish skills and sell orders paid in USDC.
  Machine-readable: <a href="/api">/api</a> · <a href="/api/openapi.json">OpenAPI</a> · MCP at <code>/mcp</code>.
</footer>
</body>
</html>
`
}

/** A page's HTML response with the headers every page carries. */
export function pageResponse(content: PageContent): Response {
  return new Response(layout(content).text, {
    status: content.status ?? 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': PAGE_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'cache-control': 'no-store',
    },
  })
}
