import type { Problem, ProblemCode } from './types.ts'

/**
 * A refusal of the agentmarket API: its HTTP status and the RFC 9457 problem's fields. `code` is the problem's
 * stable snake_case code (`ProblemCode`), or `http_<status>` when the answer was not a problem (a proxy's page).
 * `retryAfter` is the Retry-After header in seconds (429, 503, a 409 under way), else null.
 */
export class AgentmarketError extends Error {
  override readonly name = 'AgentmarketError'
  /** The HTTP status. */
  readonly status: number
  /** The problem's code, e.g. `budget_exceeded`, `tx_already_used`. */
  readonly code: ProblemCode | `http_${number}`
  /** The problem's title. */
  readonly title: string
  /** What went wrong and what to send instead. */
  readonly detail: string
  /** Seconds to wait before asking again, from Retry-After; null without one. */
  readonly retryAfter: number | null
  /** The whole problem body (with `errors`, `budget`, …), or null when the answer was not a problem. */
  readonly problem: Problem | null

  constructor(status: number, problem: Problem | null, retryAfter: number | null) {
    const code = problem?.code ?? (`http_${status}` as const)
    const detail = problem?.detail ?? `the server answered ${status} without a problem body`
    super(`${status} ${code}: ${detail}`)
    this.status = status
    this.code = code
    this.title = problem?.title ?? `HTTP ${status}`
    this.detail = detail
    this.retryAfter = retryAfter
    this.problem = problem
  }
}

/** Seconds a Retry-After header asks for (delta-seconds or an HTTP date), or null. */
export function retryAfterSeconds(headers: Headers, now = Date.now()): number | null {
  const value = headers.get('retry-after')?.trim()
  if (!value) return null
  if (/^\d+$/.test(value)) return Number(value)
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000))
}

/** True when `body` has the shape of the server's problem (a `code` and a `status`). */
function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && 'code' in body && typeof body.code === 'string'
}

/** The error of a refused answer whose body openapi-fetch already parsed (or failed to). */
export function errorOf(response: Response, body: unknown): AgentmarketError {
  return new AgentmarketError(
    response.status,
    isProblem(body) ? body : null,
    retryAfterSeconds(response.headers),
  )
}

/** The error of a refused answer whose body is still unread. */
export async function errorFromResponse(response: Response): Promise<AgentmarketError> {
  const body = await response.json().catch(() => null)
  return errorOf(response, body)
}
