import {
  type Address,
  decodeEventLog,
  type Hex,
  keccak256,
  parseAbi,
  stringToHex,
  toEventSelector,
} from 'viem'

/** TIP-20's memo-carrying transfer event: what an MPP payment on Tempo emits beside its Transfer. */
export const TRANSFER_WITH_MEMO_EVENT_ABI = parseAbi([
  'event TransferWithMemo(address indexed from, address indexed to, uint256 amount, bytes32 indexed memo)',
])

/** The first topic of a TransferWithMemo log: logs without it are not decoded (decoding them fails, expensively). */
export const TRANSFER_WITH_MEMO_TOPIC = toEventSelector(TRANSFER_WITH_MEMO_EVENT_ABI[0])

/** The first `bytes` bytes of keccak256(text), as lower-case hex digits without 0x. */
const fingerprint = (text: string, bytes: number) => keccak256(stringToHex(text)).slice(2, 2 + 2 * bytes)

// The attribution memo mppx clients write (32 bytes): tag keccak256("mpp")[0..4], version 0x01,
// keccak256(realm)[0..10], the client's fingerprint (10 bytes, ignored), keccak256(challengeId)[0..7].
const TAG_AND_VERSION = `${fingerprint('mpp', 4)}01`

// The realm is the marketplace's own, the same for every payment: its fingerprint is hashed once.
let realmFingerprint = { realm: '', digits: fingerprint('', 10) }
const fingerprintOfRealm = (realm: string) => {
  if (realmFingerprint.realm !== realm) realmFingerprint = { realm, digits: fingerprint(realm, 10) }
  return realmFingerprint.digits
}

/**
 * True when an on-chain transfer memo names this server (its realm) and this very challenge: the proof that a
 * settlement was made for the credential that carries `challengeId`, not for another holder of the same hash.
 */
export function isMemoBoundTo(memo: Hex, realm: string, challengeId: string): boolean {
  const digits = memo.toLowerCase().slice(2)
  return (
    digits.length === 64 &&
    digits.startsWith(TAG_AND_VERSION) &&
    digits.slice(10, 30) === fingerprintOfRealm(realm) &&
    digits.slice(50) === fingerprint(challengeId, 7)
  )
}

/** The Transfer-with-memo logs of a receipt (filtered by first topic, each decoded once with its own item). */
export function memoTransfers(logs: readonly { address: Address; topics: readonly Hex[]; data: Hex }[]) {
  const found: { address: Address; from: Address; to: Address; amount: bigint; memo: Hex }[] = []
  for (const log of logs) {
    if (log.topics[0]?.toLowerCase() !== TRANSFER_WITH_MEMO_TOPIC) continue
    try {
      const { args } = decodeEventLog({
        abi: TRANSFER_WITH_MEMO_EVENT_ABI,
        data: log.data,
        topics: log.topics as [Hex, ...Hex[]],
        strict: true,
      })
      found.push({ address: log.address, ...args })
    } catch {
      // Not a well-formed TransferWithMemo: it pays nothing.
    }
  }
  return found
}
