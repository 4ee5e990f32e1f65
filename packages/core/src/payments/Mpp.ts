import type { Credential } from 'mppx'
import type { Store as MppStore } from 'mppx/server'
import { type Address, type Client, type Hex, isAddressEqual, keccak256, parseEventLogs } from 'viem'
import { formatAmount } from '../Money.ts'
import { persistentSecret } from '../PersistentSecret.ts'
import { hashes } from '../ports/Hashes.ts'
import type { KvStore } from '../ports/KvStore.ts'
import type { Random } from '../ports/Random.ts'
import { plainCharge, transactionBroadcast } from './MppBroadcast.ts'
import { metaOf, mppChallenges } from './MppChallenges.ts'
import { isMemoBoundTo, TRANSFER_WITH_MEMO_EVENT_ABI, TRANSFER_WITH_MEMO_TOPIC } from './MppMemo.ts'
import { payerOf, receiptBroadcast, receiptRefusal, transactionReceipt } from './MppReceipt.ts'
import { replayKey } from './MppReplay.ts'
import { decodeTempoTransaction } from './MppTransaction.ts'

/** How a marketplace takes machine payments (MPP, method `tempo`, intent `charge`). */
export type MppSettings = {
  /** HMAC key of challenges, at least 32 bytes. */
  secretKey: string
  realm: string
  /** The token paid on the MPP network (USDC.e on Tempo). */
  currency: Address
  /** A viem client of the MPP network: the one way payments reach that chain. */
  getClient: (options: { chainId?: number }) => Client | Promise<Client>
}

/** What one paid request must pay, and what binds its challenge. */
export type ChargeRequest = {
  amountBaseUnits: bigint
  recipient: Address
  description: string
  /** The agent and skill the payment is for; a credential for another scope is refused. */
  scope: string
  /** Digest of the request body; a credential for another body is refused. */
  bodyDigest: string
}

/** What mppx's charge and a challenge take of `charge`: the price in display units, the payee, description and scope. */
const challengeFields = (charge: ChargeRequest) => ({
  // mppx takes display units and writes base units on the wire: 10000n -> "0.01" -> "10000".
  amount: formatAmount(charge.amountBaseUnits),
  recipient: charge.recipient,
  description: charge.description,
  scope: charge.scope,
})

/** The outcome of a charge: a 402 to answer (a problem, its challenge in WWW-Authenticate), or a settled payment. */
export type ChargeOutcome =
  | { paid: false; challenge: Response }
  | { paid: true; reference: Hex; withReceipt(response: Response): Response }

const SECRET_KEY_SETTING = 'setting:mpp_secret_key'

// mppx (and zod under it) costs ~270 ms to load: loaded on the first paid request, not at start-up.
let library: Promise<[typeof import('mppx'), typeof import('mppx/server')]> | null = null
const loadMppx = () => {
  library ??= Promise.all([import('mppx'), import('mppx/server')])
  return library
}

/** The MPP secret kept in the store: made once from 32 random bytes, then read by every process. */
export function persistentMppSecret(store: KvStore, random: Random): Promise<string> {
  return persistentSecret(store, random, SECRET_KEY_SETTING)
}

/** mppx's replay store over our Store, so every process sharing the database refuses a spent credential. */
function replayStore(MppStores: typeof MppStore, store: KvStore) {
  return MppStores.from({
    get: (key: string) => store.kvGet(key),
    put: (key: string, value: unknown) => store.kvPut(key, value),
    delete: (key: string) => store.kvDelete(key),
    update: ((key: string, change: Parameters<KvStore['kvUpdate']>[1]) =>
      store.kvUpdate(key, change)) as MppStore.AtomicActions['update'],
  }) as MppStore.AtomicStore
}

/**
 * The charger of machine payments: issues challenges and settles credentials with mppx, its replay markers kept in
 * our Store.
 * @example const outcome = await charger.charge(request, { amountBaseUnits: 10_000n, recipient, ... })
 */
export function createMppCharger(settings: MppSettings, store: KvStore) {
  // One Mppx instance per process, made on the first paid request.
  const create = async () => {
    const [{ Errors, Expires, Store }, server] = await loadMppx()
    const replay = replayStore(server.Store, store)
    const charge = server.tempo.charge({
      currency: settings.currency,
      getClient: settings.getClient,
      store: replay,
    })
    // mppx 0.11's handler runs a method's `validate`, then its `broadcast`; the tempo charge's broadcast validates
    // again, and repeats a sender recovery, ABI decodes and a simulation within itself. mppx keeps the challenge, the
    // credential's parsing and checks, and the 402 answers; a signed transaction is verified and sent by our
    // broadcast, each step once (MppBroadcast.ts). The attacks in tests/security/mppCredentials.test.ts fail if a
    // transaction that does not pay its challenge gets through.
    const library = { Errors, Expires, Store }
    const signed = transactionBroadcast({
      library,
      fallback: charge.broadcast as (input: never) => Promise<unknown>,
      getClient: settings.getClient,
      store: replay,
    })
    // A hash credential (the payer sent its transaction) is verified from its receipt (MppReceipt.ts), each step once.
    const broadcast = receiptBroadcast({
      library,
      fallback: signed,
      getClient: settings.getClient,
      store: replay,
    })
    return server.Mppx.create({
      secretKey: settings.secretKey,
      realm: settings.realm,
      methods: [{ ...charge, validate: undefined, broadcast: broadcast as typeof charge.broadcast }],
    })
  }
  let mppx: ReturnType<typeof create> | null = null
  const instance = () => {
    mppx ??= create()
    return mppx
  }
  const challenges = mppChallenges({
    secretKey: settings.secretKey,
    hmac: (key, message) => hashes().hmacSha256(key, message, 'base64url'),
    load: async () => {
      const [[{ Challenge, Errors, PaymentRequest }], server] = await Promise.all([loadMppx(), instance()])
      return {
        generate: (options) => server.challenge.tempo.charge(options),
        serializeChallenge: Challenge.serialize,
        serializeRecord: PaymentRequest.serialize,
        paymentRequiredProblem: (description) =>
          new Errors.PaymentRequiredError({ description }).toProblemDetails(),
      }
    },
  })
  return {
    /** The token payments are made in. */
    currency: settings.currency,
    /** The digest a challenge binds of an order's body (`text`: the order in a fixed form), SHA-256 as hex. */
    bodyDigest: async (text: string): Promise<string> => hashes().sha256(text),
    /** The payment a credential already made for this very order (see spentPayment), or null. */
    spent: (authorization: string, reference: Hex, charge: ChargeRequest) =>
      spentPayment(settings, store, authorization, reference, charge),
    /**
     * After a charge that threw: the payment `reference` made for this order when its transfer is mined (recovered
     * as `spent` does), `unsent` when mppx sent nothing (its replay marker given back), else `unknown`, its marker
     * given back so that the same credential may be sent again (its one signed transaction is mined at most once).
     */
    async afterFailedCharge(
      authorization: string,
      reference: Hex,
      charge: ChargeRequest,
    ): Promise<Hex | 'unsent' | 'unknown'> {
      if ((await store.kvGet(replayKey(reference))) === null) return 'unsent'
      const paid = await spentPayment(settings, store, authorization, reference, charge).catch(() => null)
      if (paid) return paid
      await store.kvDelete(replayKey(reference))
      return 'unknown'
    },
    /**
     * The payment a credential made for this order when its transfer is mined, whether or not its replay marker is
     * still there (an order's first credential, held by the market after an unknown outcome): null otherwise.
     */
    async minedFor(authorization: string, reference: Hex, charge: ChargeRequest): Promise<Hex | null> {
      const challenge = await ourChallengeFor(settings, authorization, charge)
      if (!challenge) return null
      return (await settledFor(settings, reference, challenge.id, charge)) ? reference : null
    },
    /**
     * True when the signed transfer `reference` can never pay: mined and reverted, or not mined and the network's
     * latest block is at or past its `validBefore` (a transfer without one may always be mined). Throws when the
     * network fails.
     */
    async expired(reference: Hex, validBefore: number | null): Promise<boolean> {
      const receipt = await receiptOf(settings, reference)
      if (receipt !== null) return receipt.status !== '0x1'
      if (validBefore === null) return false
      const latest = await blockTime(await settings.getClient({}), 'latest')
      return latest !== null && latest >= BigInt(validBefore)
    },
    /**
     * The transfer a hash credential made for this order before its challenge expired, when mppx refused it (see
     * paidBeforeExpiry): a payment whose first answer was lost, whose task's commit failed, or whose seller changed
     * its price or wallet since, is recovered. Null otherwise.
     */
    paidBeforeExpiry: (authorization: string, reference: Hex, charge: ChargeRequest) =>
      paidBeforeExpiry(settings, authorization, reference, charge),
    /** A Payment-Receipt header value for a payment settled earlier. */
    async receiptHeader(reference: Hex, at: Date): Promise<string> {
      const [{ Receipt }] = await loadMppx()
      return Receipt.serialize({ method: 'tempo', reference, status: 'success', timestamp: at.toISOString() })
    },
    /** The 402 challenge of `charge` (a problem, its challenge in WWW-Authenticate), as `charge` answers a request without a credential. */
    challenge: (charge: ChargeRequest): Promise<Response> =>
      challenges.respond({ ...challengeFields(charge), bodyDigest: charge.bodyDigest }),
    /** Answers a request with a challenge, or settles the credential it carries. */
    async charge(request: Request, charge: ChargeRequest): Promise<ChargeOutcome> {
      const [{ Credential, Receipt }] = await loadMppx()
      const fields = challengeFields(charge)
      // Without a credential (as mppx's HTTP transport reads one) the answer is its challenge, made by the issuer.
      const authorization = request.headers.get('authorization')
      if (!authorization || !Credential.extractPaymentScheme(authorization))
        return {
          paid: false,
          challenge: await challenges.respond({ ...fields, bodyDigest: charge.bodyDigest }),
        }
      // mppx's charge handler checks the credential (HMAC, binding, expiry) and hands it to the method's broadcast:
      // ours for a signed transaction (MppBroadcast.ts), mppx's for any other.
      const meta = await boundMeta(authorization, charge.bodyDigest)
      const result = await (await instance()).charge({ ...fields, meta })(request)
      if (result.status === 402) {
        // mppx answers an internal failure (the network's error on the broadcast, a failed read) as a 5xx in place of
        // its challenge: that is no refusal of the credential, and the caller asks the chain what became of it.
        if (result.challenge.status >= 500)
          throw new Error(`mppx could not settle the credential (${result.challenge.status})`)
        return { paid: false, challenge: await withPaymentRequiredCode(result.challenge) }
      }
      const receipt = Receipt.fromResponse(result.withReceipt(new Response(null)))
      return {
        paid: true,
        reference: receipt.reference.toLowerCase() as Hex,
        withReceipt: (response) => result.withReceipt(response),
      }
    },
  }
}

/**
 * mppx's 402 challenge with `code: "payment_required"` added to its problem body, as every other problem of the API
 * has a `code`; its headers (the WWW-Authenticate challenge) and other fields are kept as they are.
 */
export async function withPaymentRequiredCode(challenge: Response): Promise<Response> {
  const body: unknown = await challenge
    .clone()
    .json()
    .catch(() => null)
  const headers = new Headers(challenge.headers)
  headers.delete('content-length')
  const problem = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}
  headers.set('content-type', 'application/problem+json')
  return new Response(JSON.stringify({ ...problem, status: 402, code: 'payment_required' }), {
    status: challenge.status,
    headers,
  })
}

/** The mined receipt of `hash` on the MPP network, or null. */
async function receiptOf(settings: MppSettings, hash: Hex) {
  const client = await settings.getClient({})
  return (await client.request({ method: 'eth_getTransactionReceipt', params: [hash] } as never)) as {
    status: Hex
    logs: { address: Address; topics: [Hex, ...Hex[]]; data: Hex }[]
  } | null
}

/** The challenge a Payment credential answers, when we issued it (HMAC) for this very order; null otherwise. */
async function ourChallengeFor(settings: MppSettings, authorization: string, charge: ChargeRequest) {
  return (await ourCredentialFor(settings, authorization, charge))?.challenge ?? null
}

/** What a Payment credential carries, parsed: the credential (challenge, payload, source) and its challenge's opaque. */
type CredentialBinding = {
  credential: Credential.Credential
  /** The challenge's opaque decoded (its route binding: scope, body digest, nonce), or null when it has none. */
  bound: { _mppx_scope?: string; bodyDigest?: string; nonce?: unknown } | null
}

/** How many parsed credentials are kept: the ones of the orders in flight. */
const KEPT_CREDENTIALS = 256
const bindings = new Map<string, Promise<CredentialBinding | null>>()

/**
 * The Payment credential of an Authorization header and its challenge's opaque, parsed once per request (its payment
 * reference, its spent check, its route binding and its late recovery each read it), or null when the header is not
 * one mppx can read. Parsing is a pure function of the header, so a kept answer is the answer; nothing is checked here.
 */
function credentialBinding(authorization: string): Promise<CredentialBinding | null> {
  let found = bindings.get(authorization)
  if (!found) {
    found = parsedBinding(authorization)
    if (bindings.size >= KEPT_CREDENTIALS) bindings.delete(bindings.keys().next().value as string)
    bindings.set(authorization, found)
    // A header that is no credential is not kept: it fails again, cheaply, and fills no slot.
    const forget = () => bindings.delete(authorization)
    found.then((binding) => binding ?? forget(), forget)
  }
  return found
}

/** credentialBinding's parse: mppx's, the opaque null when absent or unreadable. */
async function parsedBinding(authorization: string): Promise<CredentialBinding | null> {
  const [{ Credential, PaymentRequest }] = await loadMppx()
  let credential: Credential.Credential
  try {
    credential = Credential.deserialize(Credential.extractPaymentScheme(authorization) ?? '')
  } catch {
    return null
  }
  try {
    const { opaque } = credential.challenge
    return {
      credential,
      bound: opaque ? (PaymentRequest.deserialize(opaque) as CredentialBinding['bound']) : null,
    }
  } catch {
    return { credential, bound: null }
  }
}

/**
 * The opaque values mppx must find in the credential's challenge for this order (its route binding): the body's
 * digest, and the challenge's own nonce when it has one (each 402 draws one, MppChallenges.ts; a challenge made before
 * nonces has none). The nonce is the credential's, since only the HMAC, which mppx checks, can vouch for it. A header
 * mppx cannot read gets the digest alone: mppx refuses it with its own problem.
 */
async function boundMeta(authorization: string, bodyDigest: string): Promise<Record<string, string>> {
  const nonce = (await credentialBinding(authorization))?.bound?.nonce
  return typeof nonce === 'string' ? metaOf({ bodyDigest }, nonce) : { bodyDigest }
}

/** A Payment credential whose challenge we issued (HMAC) for this very order, parsed; null otherwise. */
async function ourCredentialFor(settings: MppSettings, authorization: string, charge: ChargeRequest) {
  const [[{ Challenge }], binding] = await Promise.all([loadMppx(), credentialBinding(authorization)])
  if (!binding?.bound) return null
  const { credential, bound } = binding
  const { challenge } = credential
  try {
    if (!Challenge.verify(challenge, { secretKey: settings.secretKey })) return null
  } catch {
    return null
  }
  if (challenge.realm !== settings.realm) return null
  if (bound._mppx_scope !== charge.scope || bound.bodyDigest !== charge.bodyDigest) return null
  return credential
}

/**
 * The transfer a hash credential made for this order while its challenge was valid, or null, for a credential mppx
 * refused: its challenge expired since (a first answer lost, a failed task commit), or the seller changed its price or
 * wallet since the challenge was made. The challenge is ours (HMAC) for this agent, skill and body, and its own terms
 * decide (amount and recipient as the market asked then, in the market's currency): the buyer paid what it was asked.
 * The transaction is the one the credential names, mined in a block stamped at or before the challenge's expiry, and
 * pays as a hash credential must (receiptRefusal: sender and source, currency, recipient, amount, a memo bound to
 * this challenge). A transfer mined after the expiry, or anyone else's, gets null (the caller answers the challenge's
 * 402). Claiming the transfer once is the caller's (its task's unique transaction hash).
 */
async function paidBeforeExpiry(
  settings: MppSettings,
  authorization: string,
  reference: Hex,
  charge: ChargeRequest,
): Promise<Hex | null> {
  const credential = await ourCredentialFor(settings, authorization, charge)
  if (!credential) return null
  const expires = Date.parse(credential.challenge.expires ?? '')
  const { challenge, payload, source } = credential
  const asked = plainCharge(challenge.request)
  const hash = (payload as { type?: string; hash?: string }).hash
  if (
    (payload as { type?: string }).type !== 'hash' ||
    hash?.toLowerCase() !== reference.toLowerCase() ||
    !asked ||
    !Number.isFinite(expires) ||
    !isAddressEqual(asked.currency, settings.currency)
  )
    return null
  const client = await settings.getClient({ chainId: asked.chainId })
  const payer = payerOf(source, asked.chainId ?? client.chain?.id)
  if (payer === 'invalid') return null
  const receipt = await transactionReceipt(client, reference)
  if (!receipt || receiptRefusal(receipt, { hash: reference, payer, charge: asked, challenge })) return null
  const minedAt = await blockTime(client, receipt.blockNumber)
  return minedAt !== null && Number(minedAt) * 1000 <= expires ? reference : null
}

/** The time of block `block` (a number, or 'latest') in seconds since the epoch, or null when the network has none. */
async function blockTime(client: Client, block: Hex | 'latest'): Promise<bigint | null> {
  const found = (await client.request({
    method: 'eth_getBlockByNumber',
    params: [block, false],
  } as never)) as { timestamp: Hex } | null
  return found === null ? null : BigInt(found.timestamp)
}

/** True when the mined transaction `reference` paid the order's recipient with a memo bound to `challengeId`. */
async function settledFor(settings: MppSettings, reference: Hex, challengeId: string, charge: ChargeRequest) {
  const receipt = await receiptOf(settings, reference)
  if (receipt?.status !== '0x1') return false
  const logs = parseEventLogs({
    abi: TRANSFER_WITH_MEMO_EVENT_ABI,
    logs: receipt.logs.filter((log) => log.topics[0]?.toLowerCase() === TRANSFER_WITH_MEMO_TOPIC) as never,
    strict: true,
  })
  return logs.some(
    (log) =>
      isAddressEqual(log.address, settings.currency) &&
      isAddressEqual(log.args.to, charge.recipient) &&
      log.args.amount >= charge.amountBaseUnits &&
      isMemoBoundTo(log.args.memo, settings.realm, challengeId),
  )
}

/**
 * The payment a credential already made for this order, when mppx spent it earlier: the credential's challenge is
 * ours (HMAC) for this agent, skill and body, its replay marker exists, and the mined transfer's memo binds that
 * very challenge, so a credential naming someone else's settlement gets nothing. `reference` is the credential's,
 * from paymentReferenceOf. Null otherwise (the caller then lets mppx verify and settle it as new).
 */
async function spentPayment(
  settings: MppSettings,
  store: KvStore,
  authorization: string,
  reference: Hex,
  charge: ChargeRequest,
): Promise<Hex | null> {
  if ((await store.kvGet(replayKey(reference))) === null) return null
  const challenge = await ourChallengeFor(settings, authorization, charge)
  if (!challenge) return null
  return (await settledFor(settings, reference, challenge.id, charge)) ? reference : null
}

/** A charger, as actions receive it. */
export type MppCharger = ReturnType<typeof createMppCharger>

/**
 * The transaction hash a Payment credential settles (its receipt reference), or null when the header is not one.
 * It finds the task a credential already paid for, so a retry gets that task instead of a refusal.
 */
export async function paymentReferenceOf(authorization: string | null | undefined): Promise<Hex | null> {
  if (!authorization) return null
  const payload = (await credentialBinding(authorization))?.credential.payload as
    | { type?: string; hash?: string; signature?: string }
    | undefined
  try {
    if (payload?.type === 'hash' && payload.hash) return payload.hash.toLowerCase() as Hex
    if (payload?.type === 'transaction' && payload.signature) return keccak256(payload.signature as Hex)
    return null
  } catch {
    return null
  }
}

/** A pull-mode credential's signed transfer: its hash, its signer (recovered: the payer), when it stops being valid. */
export type SignedTransfer = { reference: Hex; payer: Address; validBefore: number | null }

/**
 * The signed transfer a pull-mode Payment credential carries (the market broadcasts it), or null for any other
 * header (a push-mode hash: the buyer broadcast it itself). Its payer is recovered from the signature.
 */
export async function signedTransferOf(authorization: string | null): Promise<SignedTransfer | null> {
  if (!authorization) return null
  const payload = (await credentialBinding(authorization))?.credential.payload as
    | { type?: string; signature?: string }
    | undefined
  if (payload?.type !== 'transaction' || !payload.signature) return null
  const signed = payload.signature as Hex
  try {
    // Decoded once per process: the charge that follows verifies this very transaction's calls.
    const transaction = await decodeTempoTransaction(signed)
    if (!transaction.from) return null
    return {
      reference: keccak256(signed),
      payer: transaction.from,
      validBefore: transaction.validBefore ?? null,
    }
  } catch {
    return null
  }
}

/** True when an Authorization header carries an MPP credential (`Payment …`). */
export const isPaymentCredential = (header: string | null) => /^Payment\s/i.test(header ?? '')
