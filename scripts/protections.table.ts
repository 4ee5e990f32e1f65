/** A protection: where it is in the code, how to take it out, and the test that must then fail. */
export type Protection = {
  /** A short, unique name (the script's filter matches it). */
  id: string
  /** What the protection stops, in a few words. */
  what: string
  /** The file, from the repository's root. */
  file: string
  /** The exact text that is the protection (found exactly once in the file). */
  find: string
  /** What the text becomes without the protection. */
  replace: string
  /** The test file that must fail without it. */
  test: string
  /** A test name pattern within it (bun test -t), to run only the tests that hold this protection. */
  name?: string
}

/** Every protection `scripts/protections.ts` removes in turn (issue 37: each must have a test that notices). */
export const PROTECTIONS: Protection[] = [
  {
    id: 'ipv6-network-ceiling',
    what: "an IPv6 /48 shares a ceiling, so rotating /64s does not multiply a client's allowance",
    file: 'packages/core/src/RateLimit.ts',
    find: "if (!address.includes(':') || IPV4_MAPPED.test(address)) return null",
    replace: 'return null',
    test: 'packages/core/src/RateLimit.test.ts',
    name: 'IPv6 networks',
  },
]
