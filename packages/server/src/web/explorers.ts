/** The block explorers transactions link to, by chain id; a chain not listed gets no link. */
export const TX_EXPLORERS: Readonly<Record<number, string>> = {
  1: 'https://etherscan.io',
  8453: 'https://basescan.org',
  84532: 'https://sepolia.basescan.org',
}

/** The explorer page of transaction `hash` on chain `chainId`, or null when no explorer is known for that chain. */
export function txExplorerUrl(chainId: number | null, hash: string): string | null {
  const explorer = chainId === null ? undefined : TX_EXPLORERS[chainId]
  return explorer && /^0x[0-9a-fA-F]{64}$/.test(hash) ? `${explorer}/tx/${hash}` : null
}
