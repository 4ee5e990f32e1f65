/** The path of a request URL without its query, read without parsing the whole URL (a hot path). */
export function requestPath(url: string): string {
  // A URL that is only its path (a request without a usable Host, as Bun gives it) starts there.
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  return url.slice(start, query < 0 ? undefined : query)
}

// A task id is a read credential (SECURITY.md): whatever follows `/tasks/` is kept out of the log, whatever its case.
const TASK_SEGMENT = /(\/tasks\/)[^/]+/gi

/** The path of a request URL as the log keeps it: no query, and `{id}` in place of a task id (or skill slug). */
export function loggedPath(url: string): string {
  return requestPath(url).replace(TASK_SEGMENT, '$1{id}')
}
