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
  {
    id: 'result-reveal-after-acceptance',
    what: 'a result revealed after acceptance shows buyers only its commitment until completed, never after a rejection',
    file: 'packages/core/src/Task.ts',
    find: "  if (task.reveal === 'on_delivery') return { result_url: task.resultUrl }",
    replace: '  return { result_url: task.resultUrl }',
    test: 'tests/security/revealAttacks.test.ts',
    name: 'attack',
  },
  {
    id: 'result-reveal-a2a-state',
    what: 'A2A asks for the decision (no artifact) while only the commitment of a delivery shows',
    file: 'packages/server/src/a2a/taskMapping.ts',
    find: "task.status === 'delivered' && task.result_url === undefined",
    replace: 'false',
    test: 'tests/security/revealAttacks.test.ts',
    name: 'reads its delivery under review',
  },
]
