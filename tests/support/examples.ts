import { expect } from 'bun:test'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { runToEnd } from './process.ts'

const root = resolve(import.meta.dir, '../..')

/** Builds the packages' dist/ when missing: Node runs the built JavaScript, never the TypeScript sources. */
export async function ensurePackagesBuilt(): Promise<void> {
  const built = [
    'packages/core/dist/index.js',
    // The client imports this entry: a dist built before it existed is built again.
    'packages/core/dist/typedData.js',
    'packages/store-libsql/dist/index.js',
    'packages/store-postgres/dist/index.js',
    'packages/client/dist/index.js',
  ]
  if (built.every((path) => existsSync(join(root, path)))) return
  const build = await runToEnd(['bun', 'run', 'build:packages'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '' },
  })
  if (build.exitCode !== 0) throw new Error(`bun run build:packages failed:\n${build.stderr}`)
}

/** What a test sends: a JSON body (or a raw one), a bearer key, extra headers. */
export type CallInit = { body?: unknown; raw?: BodyInit; key?: string; headers?: Record<string, string> }

/** An answer as tests read it: status, headers and the JSON body (null when empty). */
export type CallAnswer = {
  status: number
  headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: tests read many JSON shapes and assert on them
  json: any
}

/**
 * A JSON caller of one host: `send` is `fetch` for a real server, or a handler's `fetch` in process. Objects are
 * sent as JSON, raw bodies as they are (streams included).
 */
export function jsonCaller(base: string, send: (request: Request) => Promise<Response> = fetch) {
  return async (method: string, path: string, init: CallInit = {}): Promise<CallAnswer> => {
    const headers = new Headers(init.headers)
    if (init.key) headers.set('authorization', `Bearer ${init.key}`)
    const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body))
    if (body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json')
    // duplex: a streamed body needs it; Bun's RequestInit type does not list it.
    const request = new Request(`${base}${path}`, { method, headers, body, duplex: 'half' } as RequestInit)
    const response = await send(request)
    const text = await response.text()
    return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : null }
  }
}

/** Checks an answer is an RFC 9457 problem with this status and code. */
export function expectProblem(answer: CallAnswer, status: number, code: string): void {
  expect(answer.status).toBe(status)
  expect(answer.headers.get('content-type')).toBe('application/problem+json')
  expect(answer.json).toMatchObject({ status, code, title: expect.any(String), detail: expect.any(String) })
  expect(answer.json.type).toEndWith(`/problems/${code}`)
}
