import { requestPath } from '@agentmarket/core/routes'

// A task id is a read credential (SECURITY.md): whatever follows `/tasks/` is kept out of the log, whatever its case.
const TASK_SEGMENT = /(\/tasks\/)[^/]+/gi

/** The path of a request URL as the log keeps it: no query, and `{id}` in place of a task id (or skill slug). */
export function loggedPath(url: string): string {
  return requestPath(url).replace(TASK_SEGMENT, '$1{id}')
}
