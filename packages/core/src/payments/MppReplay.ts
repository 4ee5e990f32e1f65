import type { Hex } from 'viem'

/** The key under which mppx marks a transaction hash used (claimed before its broadcast, kept after). */
export const replayKey = (reference: Hex) => `mppx:charge:${reference.toLowerCase()}`
