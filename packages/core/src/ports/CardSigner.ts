/** One JWS signature of an A2A card (A2A 1.0 AgentCardSignature: flattened JWS, detached payload). */
export type CardSignature = { protected: string; signature: string; header?: Record<string, unknown> }

/**
 * Signs A2A cards with the marketplace's key (JWS over the card's JCS form, A2A 1.0 §8.4), and publishes the public
 * keys a verifier needs. A signature proves the card's A2A fields are as this marketplace served them; it says
 * nothing about the agent's own identity (the marketplace signs, not the agent).
 */
export type CardSigner = {
  /** The card's signatures (its `signatures` field, if any, is not signed over). */
  sign(card: object): Promise<CardSignature[]>
  /** The public keys (JWKs) its signatures verify with, as a JWKS lists them. */
  publicKeys(): Promise<Record<string, unknown>[]>
}
