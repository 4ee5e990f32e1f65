/** The path of a request URL without its query, read without parsing the whole URL (a hot path). */
export function requestPath(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const query = url.indexOf('?', start)
  return url.slice(start, query < 0 ? undefined : query)
}
