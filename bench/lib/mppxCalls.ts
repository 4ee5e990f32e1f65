/**
 * What mppx 0.11's tempo charge server does per paid credential (pull mode, no fee payer), read from its source
 * (`mppx/dist/tempo/server/Charge.js`, `mppx/dist/server/Mppx.js`): each costly call, how many times a payment makes
 * it as we configure mppx (its `validate` step dropped: `broadcast` runs the same validation) and as mppx's own
 * documentation configures it, and what would make it cheaper. `part` names the measurement of bench/mppProfile.ts
 * that times one call.
 */
export type MppxCall = {
  part: string
  where: string
  ours: number
  mppxDefault: number
  fix: string
}

/** The costly calls of one payment, in mppx's order. */
export const MPPX_CALLS: MppxCall[] = [
  {
    part: 'mppx.charge(options)',
    where: '`Mppx.js` createMethodFn: a handler per route call, `PaymentRequest.fromMethod` (zod parse)',
    ours: 1,
    mppxDefault: 1,
    fix: 'take per-request `meta` at call time, so a route makes its handler once',
  },
  {
    part: 'Credential.deserialize',
    where: '`Transport.http` getCredential: base64url, JSON, `Challenge.Schema.parse` (zod)',
    ours: 1,
    mppxDefault: 1,
    fix: '—',
  },
  {
    part: 'Challenge.verify',
    where: '`Mppx.js` createMethodFn: the HMAC by ox/@noble/hashes (JS)',
    ours: 1,
    mppxDefault: 1,
    fix: 'Web Crypto or the host’s native HMAC',
  },
  {
    part: 'Transaction.deserialize',
    where:
      '`Charge.js` validateTransactionCredential (in `validate`, again in `broadcast`), and `broadcast`’s `Transaction.serialize(Transaction.deserialize(…))` before sending: each recovers the sender (secp256k1, @noble/curves)',
    ours: 2,
    mppxDefault: 3,
    fix: 'validate once per credential, and serialize the transaction already decoded: one recovery',
  },
  {
    part: 'decodeFunctionData, Abis.tip20',
    where:
      '`Charge.js` decodeTransferCall, twice per matched call in assertTransferCalls; viem hashes the signature of every ABI item until the selector matches',
    ours: 2,
    mppxDefault: 4,
    fix: 'decode once, with the one item the selector already names (see below)',
  },
  {
    part: 'parseEventLogs, Abis.tip20',
    where:
      '`Charge.js` getTransferLogEffects: once for Transfer, once for TransferWithMemo, over the whole ABI',
    ours: 2,
    mppxDefault: 2,
    fix: 'the one event item, or logs picked by their first topic',
  },
  {
    part: 'eth_call simulation',
    where:
      '`Charge.js` validateTransactionCredential (in `validate`, again in `broadcast`) and the pre-broadcast simulation',
    ours: 2,
    mppxDefault: 3,
    fix: 'simulate once',
  },
]
