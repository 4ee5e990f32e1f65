import { keccak256, stringToHex } from 'viem'
import { type Signer, signTyped } from './typedData.ts'

/** The request a wallet proof is made for: the market (its BASE_URL), the method, the path called, the exact body. */
export type ProvedRequest = { market: string; method: string; path: string; body: string }

/**
 * The wallet proof headers of one request (`X-Wallet-Scheme: eip712`): `signer` signs the EIP-712 `WalletRequest
 * {market, method, path, body: keccak256 of the body bytes, timestamp}` in domain `{name: "agentmarket", version:
 * "1"}`, the timestamp now in milliseconds. The market accepts a proof once: sign each request afresh.
 */
export async function walletProofHeaders(
  signer: Signer,
  request: ProvedRequest,
  now: Date = new Date(),
): Promise<Record<string, string>> {
  const timestamp = BigInt(now.getTime())
  const signature = await signTyped(signer, {
    domain: { name: 'agentmarket', version: '1' },
    primaryType: 'WalletRequest',
    message: {
      market: request.market,
      method: request.method.toUpperCase(),
      path: request.path,
      body: keccak256(stringToHex(request.body)),
      timestamp,
    },
  })
  return {
    'X-Wallet-Scheme': 'eip712',
    'X-Wallet-Timestamp': String(timestamp),
    'X-Wallet-Signature': signature,
  }
}
