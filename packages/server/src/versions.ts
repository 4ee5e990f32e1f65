/** One version of the API, and its deprecation when one is scheduled. */
export type ApiVersion = {
  name: string
  deprecation?: { deprecatedAt: Date; sunsetAt: Date; successor: string }
}

/** The versions this server serves. Unversioned /api paths are the first one. */
export const API_VERSIONS: ApiVersion[] = [{ name: 'v1' }]

/** The policy text every index shows. */
export const VERSIONING_POLICY =
  'Unversioned /api paths are v1 and are also served under /api/v1. Breaking changes ship under a new prefix ' +
  '(/api/v2). A deprecated version answers with Deprecation (RFC 9745) and Sunset (RFC 8594) headers and a Link ' +
  'to its successor, and stays available at least 180 days after its successor ships. Unknown versions are 404.'

/** The version a path belongs to (`/api/...` belongs to the default one), or null outside the API. */
export function versionOfPath(pathname: string, versions: ApiVersion[]): ApiVersion | null {
  if (pathname !== '/api' && !pathname.startsWith('/api/')) return null
  const segment = pathname.split('/')[2] ?? ''
  if (/^v\d+$/.test(segment)) return versions.find((version) => version.name === segment) ?? null
  return versions[0] ?? null
}

/** The headers a deprecated version answers with. */
export function deprecationHeaders(version: ApiVersion, baseUrl: string): Record<string, string> {
  if (!version.deprecation) return {}
  const { deprecatedAt, sunsetAt, successor } = version.deprecation
  return {
    deprecation: `@${Math.floor(deprecatedAt.getTime() / 1000)}`,
    sunset: sunsetAt.toUTCString(),
    link: `<${baseUrl}/api/${successor}>; rel="successor-version"`,
  }
}
