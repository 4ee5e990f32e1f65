import { routeNotFound } from '../http.ts'
import type { RouteRow } from './RouteRow.ts'

/** A matched operation and its decoded path parameters. */
export type RouteMatch = { row: RouteRow; params: Record<string, string> }

/** One row's path as a pattern over the part after `/api` or `/api/v1`, and its parameters' names. */
function compile(row: RouteRow) {
  const names: string[] = []
  const source = row.path
    .split('/')
    .map((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment)?.[1]
      if (!param) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      names.push(param)
      return '([^/]+)'
    })
    .join('/')
  return { row, names, pattern: new RegExp(`^${source}/?$`) }
}

/**
 * A matcher over `rows`: the operation a method and path name, or null. Static segments win over parameters
 * (`/agents/register` before `/agents/{name}`); a parameter that is not valid percent-encoding is a 404.
 */
export function compileRoutes(rows: readonly RouteRow[]) {
  const compiled = rows
    .map(compile)
    // Fewer parameters first, so a static segment is tried before a parameter in its place.
    .sort((a, b) => a.names.length - b.names.length)
  return (method: string, pathname: string): RouteMatch | null => {
    const rest = /^\/api(?:\/v1)?(\/.*)$/.exec(pathname)?.[1]
    if (rest === undefined) return null
    for (const { row, names, pattern } of compiled) {
      if (row.method !== method) continue
      const found = pattern.exec(rest)
      if (!found) continue
      try {
        return {
          row,
          params: Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1] ?? '')])),
        }
      } catch {
        throw routeNotFound()
      }
    }
    return null
  }
}

/**
 * The methods `rows` take at a path (under `/api` or `/api/v1`), sorted; empty when no row has the path. A request
 * whose method is not among them is a 405 with `Allow`, not a 404.
 */
export function compileAllowedMethods(rows: readonly RouteRow[]) {
  const compiled = rows.map(compile)
  return (pathname: string): string[] => {
    const rest = /^\/api(?:\/v1)?(\/.*)$/.exec(pathname)?.[1]
    if (rest === undefined) return []
    const methods = compiled.filter(({ pattern }) => pattern.test(rest)).map(({ row }) => row.method)
    return [...new Set(methods)].sort()
  }
}
