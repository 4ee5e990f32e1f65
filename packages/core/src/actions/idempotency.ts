import { bytesToHex, hexToBytes } from 'viem'
import { DEFAULT_IDEMPOTENCY_QUOTA } from '../Config.ts'
import {
  ConflictError,
  IdempotencyKeyInUseError,
  InvalidInputError,
  idempotencyKeyReused,
  MarketError,
  StorageFullError,
  StoreUnavailableError,
  UnauthorizedError,
} from '../errors.ts'
import type { KvStore } from '../ports/KvStore.ts'
import { outsideRequest } from '../ports/requestScope.ts'
import { inWriteScope } from '../ports/writeScope.ts'
import { IdempotencyKey } from '../TaskInput.ts'
import { parseInput } from '../Validation.ts'
import type { ActionContext } from './context.ts'
import { chargeRow, limitOf, type QuotaOwner, refundRow } from './idempotencyQuota.ts'

/** How long a first answer is kept for retries under its Idempotency-Key (as Stripe: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/** How long an answer holding a secret shown once (an API key, a webhook secret) is replayed: 10 minutes. */
export const SECRET_REPLAY_MS = 10 * 60 * 1000

/**
 * The largest answer kept for replay (its JSON): a key stores at most about twice this, so a client writing whole
 * profiles under fresh keys cannot make each write store its 64 KiB answer again. A larger answer is not kept: a
 * retry is told so (409 `idempotency_replay_expired`), never run twice.
 */
export const MAX_KEPT_ANSWER_BYTES = 16 * 1024

/** How long a request under a key counts as still under way (longer than any request's own time bounds). */
export const IN_FLIGHT_MS = 60 * 1000

/** How many key endings a process keeps to write later while the store refuses them (past that, retries wait). */
const MAX_UNSETTLED = 10_000

/**
 * How many expired rows (keys nobody retried, quota rows whose answers are forgotten) each keyed write removes: more
 * than one write leaves (its entry and a quota row per owner), so the sweep keeps up with the writes.
 */
const SWEPT_PER_WRITE = 8

/** After a sweep that found fewer expired rows than it may remove, how long keyed writes skip sweeping. */
const SWEEP_REST_MS = 60 * 1000

const HOUR_MS = 60 * 60 * 1000
const utf8 = new TextEncoder()

/** One write under an Idempotency-Key: who sends it where (`scope`), the key, and a digest of what it sends. */
export type IdempotentRequest = {
  /** The client, its credential and the operation (method and path): keys of different scopes never meet. */
  scope: string
  key: string
  /** A digest of the body: the same key with another body is a conflict. */
  fingerprint: string
  /** The answer holds a secret shown once: replayed for SECRET_REPLAY_MS only. */
  shownOnce: boolean
  /**
   * The answer is kept whatever the client's quota of kept answers: a secret nobody can issue again without the
   * agent's owner (an API key), on an operation limited to a few an hour (registration, key rotation).
   */
  keptPastQuota?: boolean
  /**
   * Who is charged for the kept answer (`IdempotencyQuota`): the client address, its network, the API key. Absent:
   * the scope alone.
   */
  owners?: QuotaOwner[]
  /**
   * Whether the credential the request presents still works (a key rotated since does not): a secret shown once is
   * replayed only when it does. Absent: the request presents none to check (a registration, a wallet proof).
   */
  credentialValid?: () => Promise<boolean>
}

/** A successful answer kept for retries. */
export type KeptAnswer = { status: number; body: unknown; headers: Record<string, string> }

/** A kept answer given back to a retry. */
export type ReplayedAnswer = KeptAnswer & { replayed: true }

/** What the store keeps under a key's name; the answer sealed (AES-GCM) under a key only the client's key opens. */
type Entry =
  | { state: 'running'; fingerprint: string; since: number; forgetAt: number }
  | { state: 'unknown'; fingerprint: string; since: number; forgetAt: number }
  | {
      state: 'done'
      fingerprint: string
      sealed: { iv: string; data: string } | null
      /** The answer was over MAX_KEPT_ANSWER_BYTES, so none was kept. */
      tooLarge?: boolean
      /** The client's quota of kept answers was full, so none was kept. */
      overQuota?: boolean
      replayUntil: number
      forgetAt: number
    }

/** Checks an Idempotency-Key header, or throws a 400 naming it. */
export function parseIdempotencyKey(key: string): string {
  try {
    return parseInput(IdempotencyKey, key)
  } catch {
    throw new InvalidInputError(
      'invalid_idempotency_key',
      'The Idempotency-Key header must be 1-255 visible ASCII characters.',
      [{ pointer: '', detail: 'Idempotency-Key must be 1-255 visible ASCII characters' }],
    )
  }
}

/** A failure that changed nothing: the key is released so a retry runs again. */
function changedNothing(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return error.outcome === 'unchanged'
  return error instanceof MarketError
}

const isEntry = (value: unknown): value is Entry =>
  typeof value === 'object' && value !== null && 'state' in value && 'forgetAt' in value

/** The `idempotent` action: keeps the first successful answer of a write under the client's Idempotency-Key. */
export function idempotencyActions(context: ActionContext<KvStore>) {
  const { store, clock, pairing, config } = context
  const quota = config.idempotencyQuota ?? DEFAULT_IDEMPOTENCY_QUOTA

  /** A name derived from the scope and key under the market's secret (HMAC): the store never holds the key. */
  const derive = async (label: string, request: IdempotentRequest) =>
    (await pairing.of(`idempotency:${label}\n${request.scope}\n${request.key}`)).slice(3)

  async function sealingKey(request: IdempotentRequest): Promise<CryptoKey> {
    const raw = new Uint8Array(hexToBytes(`0x${await derive('seal', request)}`))
    return crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt'])
  }

  async function seal(request: IdempotentRequest, answer: KeptAnswer) {
    const iv = crypto.getRandomValues(new Uint8Array(12))
    const plain = utf8.encode(JSON.stringify(answer))
    const data = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await sealingKey(request), plain)
    return { iv: bytesToHex(iv), data: bytesToHex(new Uint8Array(data)) }
  }

  async function open(request: IdempotentRequest, sealed: { iv: string; data: string }) {
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: new Uint8Array(hexToBytes(sealed.iv as `0x${string}`)) },
      await sealingKey(request),
      new Uint8Array(hexToBytes(sealed.data as `0x${string}`)),
    )
    return JSON.parse(new TextDecoder().decode(plain)) as KeptAnswer
  }

  /** The quota row of an owner, named by an HMAC under the market's secret as keys are. */
  const quotaRow = async (owner: QuotaOwner) => (await pairing.of(`idempotency:quota\n${owner.id}`)).slice(3)

  /** The owners a request is charged to: those it names, else its scope. */
  const ownersOf = (request: IdempotentRequest): QuotaOwner[] =>
    request.owners?.length ? request.owners : [{ id: `scope:${request.scope}`, share: 1 }]

  /**
   * Charges a kept answer of `bytes` stored to each owner of the request, in `hour`: false, with nothing charged, when
   * one owner's quota is full (an answer `keptPastQuota` is charged and kept whatever its quota). Each charge pushes
   * the row's expiry to when the answer it counts is forgotten.
   */
  async function charge(request: IdempotentRequest, bytes: number, hour: number): Promise<boolean> {
    const charged: string[] = []
    for (const owner of ownersOf(request)) {
      const row = await quotaRow(owner)
      const limit = limitOf(quota, owner)
      const result = await store.kvUpdate(`idem-quota:${row}`, (current) =>
        chargeRow(current, hour, bytes, limit, request.keptPastQuota === true),
      )
      if (result === 'refused') {
        for (const done of charged)
          await store.kvUpdate(`idem-quota:${done}`, (current) => refundRow(current, hour, bytes))
        return false
      }
      charged.push(row)
    }
    return true
  }

  /** Whether a sealed answer is kept: the client's quota takes it. A store that refuses the count keeps it (a fault). */
  const keptWithinQuota = (request: IdempotentRequest, bytes: number, now: number) =>
    charge(request, bytes, Math.floor(now / HOUR_MS)).catch(() => true)

  /** Frees a key whose request (started at `since`) changed nothing: its entry goes. */
  async function free(name: string, since: number) {
    await store.kvUpdate(`idem:${name}`, (current) =>
      isEntry(current) && current.state === 'running' && current.since === since
        ? { op: 'delete', result: null }
        : { op: 'noop', result: null },
    )
  }

  /** Marks the key of a request (started at `since`) that ended with its outcome unknown, so retries are told at once. */
  async function markUnknown(name: string, since: number) {
    await store.kvUpdate(`idem:${name}`, (current) =>
      isEntry(current) && current.state === 'running' && current.since === since
        ? { op: 'set', value: { ...current, state: 'unknown' }, result: null }
        : { op: 'noop', result: null },
    )
  }

  /** Until when keyed writes skip the sweep: the last one found fewer expired rows than it may remove. */
  let restUntil = Number.NEGATIVE_INFINITY

  /**
   * Removes a few expired rows of the store (kvSweepExpired), so keys nobody retries and their quota rows go; each
   * entry carries its own expiry, so nothing is listed per hour and a write's cost does not grow with the hour's.
   */
  async function sweep(now: number) {
    if (now < restUntil) return
    const removed = await store.kvSweepExpired(new Date(now), SWEPT_PER_WRITE)
    restUntil = removed < SWEPT_PER_WRITE ? now + SWEEP_REST_MS : Number.NEGATIVE_INFINITY
  }

  /** The answer to a retry that found the key already taken. */
  async function answerRetry(
    request: IdempotentRequest,
    name: string,
    entry: Entry,
    now: number,
  ): Promise<ReplayedAnswer> {
    if (entry.fingerprint !== request.fingerprint) throw idempotencyKeyReused()
    if (entry.state === 'running' || entry.state === 'unknown') {
      const left = entry.since + IN_FLIGHT_MS - now
      if (entry.state === 'running' && left > 0) throw new IdempotencyKeyInUseError(Math.ceil(left / 1000))
      throw new ConflictError(
        'idempotency_outcome_unknown',
        'The first request with this Idempotency-Key ended without an answer (the server or its database failed under it), so whether it landed is unknown; it is not run again under this key. Read the resource to see whether it exists; send a new key to try again.',
      )
    }
    if (entry.sealed && entry.replayUntil > now) {
      if (request.shownOnce && request.credentialValid && !(await request.credentialValid()))
        throw new UnauthorizedError(
          "The first request with this Idempotency-Key succeeded, but the credential it was sent with no longer works (the key was rotated since), so its answer, which holds a secret shown once, is not replayed. It is not run again under this key. Send requests with the current key; if the secret that answer held was lost, replace it: rotate the API key with the owner's wallet proof (POST /api/agents/{name}/keys/rotate), or delete the webhook and add it again.",
          'idempotency_credential_revoked',
        )
      return { ...(await open(request, entry.sealed)), replayed: true }
    }
    if (!entry.sealed && entry.tooLarge)
      throw new ConflictError(
        'idempotency_replay_expired',
        `The first request with this Idempotency-Key succeeded; its answer was over ${MAX_KEPT_ANSWER_BYTES / 1024} KiB and is not kept for replay. It is not run again under this key: read the resource.`,
      )
    if (!entry.sealed && entry.overQuota)
      throw new ConflictError(
        'idempotency_replay_expired',
        `The first request with this Idempotency-Key succeeded; its answer is not kept for replay because this client's quota of kept answers (${quota.answers} answers or ${Math.floor(quota.bytes / 1024)} KiB within 24 hours) was full. It is not run again under this key: read the resource${request.shownOnce ? '; a secret it held is not shown again: issue a new one (a new pairing code, or delete the webhook and add it again)' : ''}.`,
      )
    if (entry.sealed) {
      const expired = entry.sealed
      // Past its window a secret's answer is dropped from the store, not only withheld.
      await store.kvUpdate(`idem:${name}`, (current) =>
        isEntry(current) && current.state === 'done' && current.sealed?.data === expired.data
          ? { op: 'set', value: { ...current, sealed: null }, result: null }
          : { op: 'noop', result: null },
      )
    }
    throw new ConflictError(
      'idempotency_replay_expired',
      `The first request with this Idempotency-Key succeeded; its answer held a secret shown once and is replayed for ${SECRET_REPLAY_MS / 60_000} minutes only. It is not run again under this key: read the resource, or rotate the secret if it was lost.`,
    )
  }

  // How a request's key ends (freed, its answer kept, its outcome unknown) is written when the request ends. When the
  // store cannot take it then (the database down, the disk full), it is kept here and written before this node's next
  // request under a key, so a retry after the fault gets the true answer, not "still under way".
  const unsettled = new Map<string, () => Promise<unknown>>()

  /** Writes how the key `name` ended, or keeps the step for later when the store refuses it. */
  async function settle(name: string, step: () => Promise<unknown>) {
    try {
      await step()
      unsettled.delete(name)
    } catch {
      if (unsettled.size < MAX_UNSETTLED || unsettled.has(name)) unsettled.set(name, step)
    }
  }

  /**
   * Writes how the key ended after `error`: awaited after a refusal (the store is healthy, and a retry right after
   * must find the key freed), in the background after a store fault (the database is down or stuck, so the step would
   * most likely wait a second deadline before it is kept for later, and the answer must not wait for it).
   */
  async function settleAfter(error: unknown, name: string, step: () => Promise<unknown>) {
    const ending = settle(name, step)
    if (!(error instanceof StoreUnavailableError || error instanceof StorageFullError)) await ending
  }

  /** The writing of the other endings kept earlier, while one is under way (one at a time per process). */
  let draining: Promise<void> | null = null

  /**
   * Writes the ending kept earlier for `first` (this request's own key: its answer depends on it), and sets the
   * others going in the background, outside the request: after an outage the first request under a key would
   * otherwise carry the whole backlog (seen: 20 writes ahead of its own, a 201 after 6 s). Stops at the first ending
   * the store still refuses.
   */
  async function settleEarlier(first: string) {
    const own = unsettled.get(first)
    if (own) await settle(first, own)
    if (draining || unsettled.size === 0) return
    draining = outsideRequest(async () => {
      for (const [name, step] of unsettled) {
        try {
          await step()
          unsettled.delete(name)
        } catch {
          return
        }
      }
    }).finally(() => {
      draining = null
    })
  }

  return {
    /**
     * Runs a write once per client and Idempotency-Key: the first request runs `run` and its successful answer
     * (`keep` says which) is kept, sealed, for IDEMPOTENCY_TTL_MS (SECRET_REPLAY_MS when it holds a secret); a retry
     * with the same body gets it back (`replayed`), another body is 409 `idempotency_key_reused`, a retry while the
     * first is under way 409 `idempotency_key_in_use`. A failure that changed nothing frees the key; one whose outcome
     * is unknown keeps it taken, so a retry never runs the write twice.
     * @example await market.idempotent(request, () => run(), (reply) => (reply.status < 300 ? reply : null))
     */
    async idempotent<R>(
      request: IdempotentRequest,
      run: () => Promise<R>,
      keep: (reply: R) => KeptAnswer | null,
    ): Promise<R | ReplayedAnswer> {
      parseIdempotencyKey(request.key)
      const name = await derive('entry', request)
      if (unsettled.size > 0) await settleEarlier(name)
      const now = clock.now().getTime()
      const forgetAt = now + IDEMPOTENCY_TTL_MS
      const running: Entry = { state: 'running', fingerprint: request.fingerprint, since: now, forgetAt }
      let found: Entry | null
      try {
        found = await store.kvUpdate(`idem:${name}`, (current) =>
          isEntry(current) && current.forgetAt > now
            ? { op: 'noop', result: current }
            : { op: 'set', value: running, result: null, expiresAt: new Date(forgetAt) },
        )
      } catch (error) {
        // The claim may still land (a database that froze under it): nothing ran, so it is freed when the store takes
        // writes again, or a retry would hear "under way" until the claim's minute is over.
        await settleAfter(error, name, () => free(name, now))
        throw error
      }
      if (found) return answerRetry(request, name, found, now)
      let reply: R
      try {
        // One write scope: a fault after one of the run's writes landed is an unknown outcome and keeps the key.
        reply = await inWriteScope(run)
      } catch (error) {
        // The write's own error is the answer; the key's ending is written now or, if the store refuses, later.
        if (changedNothing(error)) await settleAfter(error, name, () => free(name, now))
        else await settleAfter(error, name, () => markUnknown(name, now))
        throw error
      }
      const answer = keep(reply)
      if (!answer) {
        await settle(name, () => free(name, now))
        return reply
      }
      // A secret shown once is kept whatever its answer's size: losing it would lose the secret; such writes have
      // their own tight rate limits (registrations, rotations, pairing).
      const tooLarge = !request.shownOnce && JSON.stringify(answer).length > MAX_KEPT_ANSWER_BYTES
      const sealed = tooLarge ? null : await seal(request, answer)
      // Past the client's quota the write has run and its answer is the client's; only its replay is not kept (a
      // retry hears 409 idempotency_replay_expired, as for an oversize answer), so no write ever runs twice.
      const overQuota =
        sealed !== null && !(await keptWithinQuota(request, sealed.iv.length + sealed.data.length, now))
      const done: Entry = {
        state: 'done',
        fingerprint: request.fingerprint,
        sealed: overQuota ? null : sealed,
        tooLarge,
        ...(overQuota && { overQuota }),
        replayUntil: request.shownOnce ? now + SECRET_REPLAY_MS : forgetAt,
        forgetAt,
      }
      // The write is done and its answer is the client's even when keeping it fails now: it is kept later, and until
      // then a retry finds the key running, never runs the write twice.
      await settle(name, () => store.kvPut(`idem:${name}`, done, { expiresAt: new Date(forgetAt) }))
      await sweep(now).catch(() => {})
      return reply
    },
  }
}
