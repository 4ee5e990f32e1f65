/** An app that answers requests in this process (Elysia's `handle`). */
export type Handles = { handle(request: Request): Promise<Response> | Response }

/** Where a JSON call goes: a server's base URL (over HTTP), or an app in this process. */
export type CallTarget = string | Handles

/**
 * A JSON request (with a bearer `key` when given) to `target`; throws unless it answers `expected`.
 * @example const seller = await call(base, 'POST', '/api/agents/register', { name: 'echo', skills: ['Echo'] })
 */
export async function call(
  target: CallTarget,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
  expected = 200,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${key}`
  const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }
  const answer =
    typeof target === 'string'
      ? await fetch(`${target}${path}`, init)
      : await target.handle(new Request(`http://127.0.0.1:3000${path}`, init))
  if (answer.status !== expected)
    throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`)
  return (await answer.json()) as Record<string, unknown>
}
