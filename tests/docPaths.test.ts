import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ENDPOINTS } from '../packages/server/src/routes/discovery.ts'
import { llmsGuide, llmsIndex } from '../packages/server/src/routes/llms.ts'
import { testApp } from '../packages/server/src/testing/http.ts'

// Every path the documents name must be one the server serves: the API's from the route table (its rows, as the
// index lists them), the rest (MCP, A2A, well-known, llms.txt) from the server's own mounts. A renamed or removed
// route then fails here, naming the document and line that still send readers to it.

const ROOT = join(import.meta.dir, '..')
const BASE = 'https://market.example'

/** A route a document may name: method and path template (`{name}` or `:name` a parameter, `*` the rest). */
type Route = { method: string; path: string }

/** A path named in a document, with the method written before it, if any. */
type Mention = { document: string; line: number; method: string | null; path: string }

/** The documents: README, CONTRIBUTING, SECURITY, docs/*.md, and llms.txt and llms-full.txt as served. */
function documents(): { name: string; text: string }[] {
  const markdown = ['README.md', 'CONTRIBUTING.md', 'SECURITY.md']
    .concat(readdirSync(join(ROOT, 'docs')).flatMap((file) => (file.endsWith('.md') ? [`docs/${file}`] : [])))
    .map((name) => ({ name, text: readFileSync(join(ROOT, name), 'utf8') }))
  return [
    ...markdown,
    { name: 'llms.txt', text: llmsIndex(BASE, 'orders@market.example', 8453) },
    { name: 'llms-full.txt', text: llmsGuide(BASE, 'orders@market.example', 8453) },
  ]
}

// A path under one of the server's mounts (not a file's path, such as tests/mcp/…: nothing of a word before it),
// maybe after a method and a base URL (or a shell variable holding one); it ends at a character no path here holds (`?` starts a query).
const MENTION =
  /(?<![\w.\-/])(?:\b(GET|POST|PUT|DELETE|PATCH|HEAD)\s+`?)?(?:https?:\/\/[^\s/`]+|\$\{?\w+\}?)?(\/(?:api|mcp|a2a|\.well-known|llms(?:-full)?\.txt)(?![\w+-])[^\s`)"'|,<>\]?#]*)/g

/** Every path a document names, by line. */
function mentions(document: { name: string; text: string }): Mention[] {
  return document.text.split('\n').flatMap((text, index) =>
    [...text.matchAll(MENTION)].map(([, method, path = '']) => ({
      document: document.name,
      line: index + 1,
      method: method ?? null,
      path: path.replace(/[.:;]+$/, ''),
    })),
  )
}

/** A path's segments, the version prefix (/api/v1, or /api/vN for any) read as /api: the table serves both. */
const segments = (path: string) =>
  path
    .replace(/^\/api\/v(1|N)(?=\/|$)/, '/api')
    .split('/')
    .filter(Boolean)

/** A placeholder segment in a document: `{name}`, `<name>`, `$NAME` or `:name`. */
const isPlaceholder = (segment: string) => /^(\{[^}]+\}|<[^>]+>|\$[A-Z_]+|:\w+)$/.test(segment)
/** A path a document cut short: `/api/...` means some path under /api. */
const isRest = (segment: string) => segment === '...' || segment === '…'

/** Whether the named path is one `route` serves. */
function serves(route: Route, named: string): boolean {
  const want = segments(named)
  const have = segments(route.path)
  for (const [index, segment] of want.entries()) {
    const template = have[index]
    if (template === '*' || isRest(segment)) return true
    if (template === undefined) return false
    const parameter = isPlaceholder(template)
    if (isPlaceholder(segment) ? !parameter : !parameter && segment !== template) return false
  }
  return want.length === have.length || have[want.length] === '*'
}

/** The routes documents may name: the route table's rows, and the server's mounts outside /api. */
async function servedRoutes(): Promise<Route[]> {
  const { app } = await testApp()
  const mounts = app.routes.filter((route) => !route.path.startsWith('/api'))
  return [...ENDPOINTS, ...mounts.map(({ method, path }) => ({ method, path }))]
}

describe('paths named in the documents', () => {
  test('behavior: every path README, docs/*.md and llms.txt name is a row of the route table or a mount', async () => {
    const routes = await servedRoutes()
    const named = documents().flatMap(mentions)
    expect(named.length).toBeGreaterThan(100)
    const unknown = named.filter(
      (mention) =>
        !routes.some(
          (route) =>
            (mention.method === null || route.method === mention.method) && serves(route, mention.path),
        ),
    )
    expect(
      unknown.map((mention) =>
        `${mention.document}:${mention.line}: ${mention.method ?? ''} ${mention.path}`.trim(),
      ),
    ).toEqual([])
  })

  test('behavior: the matcher tells a served path from one that is not', async () => {
    const routes = await servedRoutes()
    const resolves = (method: string | null, path: string) =>
      routes.some((route) => (method === null || route.method === method) && serves(route, path))
    expect(resolves('GET', '/api/agents/scout/tasks/task_1')).toBe(true)
    expect(resolves('POST', '/api/v1/agents/{name}/tasks/{skill_slug}')).toBe(true)
    expect(resolves(null, '/a2a/agents/{name}/rest/tasks')).toBe(true)
    expect(resolves(null, '/api/...')).toBe(true)
    expect(resolves('PUT', '/api/agents/{name}/heartbeat')).toBe(false)
    expect(resolves(null, '/api/agents/{name}/nothing')).toBe(false)
    expect(resolves(null, '/api/feed')).toBe(false)
    // A placeholder names a parameter, never a fixed segment.
    expect(resolves('POST', '/api/agents/{name}')).toBe(false)
  })
})
