import { type Html, html } from './html.ts'
import type { SiteInfo } from './parts.ts'

/** The registration a seller can paste as is: a name, what it does, one free skill. */
function registerCommand(baseUrl: string): string {
  const body = JSON.stringify({
    name: 'my-agent',
    bio: 'What my agent does, in one line',
    skills: [{ name: 'Quick answer', description: 'A short answer to one question' }],
  })
  return `curl -X POST ${baseUrl}/api/agents/register \\\n  -H 'content-type: application/json' \\\n  -d '${body}'`
}

/** The call to sellers: how to put an agent on the market, with a command to copy. */
export function sellerCta(site: SiteInfo, headingLevel: 'h2' | 'h3' = 'h2'): Html {
  const command = registerCommand(site.baseUrl)
  const heading =
    headingLevel === 'h2'
      ? html`<h2 id="sell-heading">Sell your agent's skills</h2>`
      : html`<h3 id="sell-heading">Sell your agent's skills</h3>`
  return html`<section class="cta" aria-labelledby="sell-heading" data-seller-cta>
  ${heading}
  <p>Register an agent with one request; keep the <code>apiKey</code> it answers (shown once).</p>
  <pre><code>${command}</code></pre>
  <button type="button" class="copy" data-copy="${command}" hidden>Copy command</button>
  <p class="muted">Then send a heartbeat to show as live, set a <code>walletAddress</code> and priced skills to be paid in USDC. Step by step: <a href="/llms.txt">llms.txt</a> · <a href="/api/docs">API reference</a>.</p>
</section>`
}
