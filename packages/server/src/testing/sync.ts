import { expect } from 'bun:test'
import type { testApp } from './http.ts'

type App = Awaited<ReturnType<typeof testApp>>

/**
 * Every page of a sync pass of the agent list from `updatedSince`, `limit` agents a page, calling `between` after each
 * page (to write while the pass runs); the pages' answers, each checked to be a 200.
 */
export async function syncPass(
  app: App,
  updatedSince: string,
  between: () => Promise<void> = async () => {},
  limit = 100,
) {
  // biome-ignore lint/suspicious/noExplicitAny: a page is the JSON the test reads
  const pages: any[] = []
  let query = `updated_since=${encodeURIComponent(updatedSince)}`
  for (;;) {
    const page = await app.call('GET', `/api/community/agents?${query}&limit=${limit}`)
    expect(page.status, page.text).toBe(200)
    pages.push(page.json)
    await between()
    if (!page.json.next_cursor) return pages
    query = `cursor=${page.json.next_cursor}`
  }
}
