/** Source of randomness, injected so tests can be exact. */
export type Random = {
  /** `length` cryptographically secure random bytes. */
  bytes(length: number): Uint8Array
}

/** Randomness from the platform's Web Crypto (Bun, Node 20+, Deno, Workers). */
export function cryptoRandom(): Random {
  return {
    bytes(length) {
      return crypto.getRandomValues(new Uint8Array(length))
    },
  }
}
