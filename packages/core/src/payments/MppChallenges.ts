import type { Challenge } from 'mppx'
import type { Address } from 'viem'
import { base64Url } from '../ports/Hashes.ts'

/** What one 402 challenge asks for and binds: the price, the payee, and the agent, skill and body it is for. */
export type ChallengeFields = {
  /** In display units, as mppx's charge takes it ("0.01"). */
  amount: string
  recipient: Address
  description: string
  scope: string
  bodyDigest: string
}

/** The parts of mppx that make a challenge: its tempo charge generator and its serializers, loaded with mppx. */
export type ChallengeLibrary = {
  /** `mppx.challenge.tempo.charge` of the marketplace's Mppx instance. */
  generate(options: {
    amount: string
    recipient: Address
    description: string
    scope?: string
    meta?: Record<string, string>
    expires?: string
  }): Promise<Challenge.Challenge>
  serializeChallenge(challenge: Challenge.Challenge): string
  /** Canonical JSON as base64url (mppx's PaymentRequest.serialize), how a challenge's request and opaque are written. */
  serializeRecord(record: Record<string, unknown>): string
  /** The problem details mppx answers a request without a credential with, before its challenge id. */
  paymentRequiredProblem(description: string): Record<string, unknown>
}

/** How long a challenge may be paid, as mppx's charge handler sets it (Expires.minutes(5)). */
const CHALLENGE_TTL_MS = 5 * 60 * 1000
/** Templates kept (one per price, payee and description in use); the oldest goes first. */
const MAX_TEMPLATES = 1_000
/** The opaque key mppx binds a route's scope under (its Scope.merge). */
const SCOPE_KEY = '_mppx_scope'

/**
 * 16 random bytes as base64url: each challenge's own, so two 402s for the same order in the same millisecond are two
 * challenges (a transfer whose memo names one cannot be claimed under the other).
 */
const newNonce = () => base64Url(crypto.getRandomValues(new Uint8Array(16)))

/** The opaque values a challenge binds besides its scope (mppx's `meta`): the body's digest and the nonce. */
export const metaOf = (fields: Pick<ChallengeFields, 'bodyDigest'>, nonce: string) => ({
  bodyDigest: fields.bodyDigest,
  nonce,
})

/**
 * What every challenge for one price, payee and description shares, made once by mppx itself: the HMAC input up to
 * the expiry (realm, method, intent, the normalized request), the header's fixed parameters, and the problem body
 * (its JSON up to the fields each challenge adds).
 */
type Template = { bindingPrefix: string; headerMiddle: string; problemStart: string }

const utf8 = new TextEncoder()

/** Text every character of which is ASCII: its UTF-8 bytes are its characters. */
const ASCII = /^[\x20-\x7e]*$/

/**
 * A challenge's opaque as mppx writes it (PaymentRequest.serialize: canonical JSON, RFC 8785, as base64url without
 * padding) of its scope, body digest and nonce, written directly: the keys in their sorted order, each string as
 * JSON.stringify writes it, which is how canonical JSON writes strings. Null when the text is not ASCII: mppx's
 * serializer writes that one.
 */
function opaqueText(fields: ChallengeFields, nonce: string): string | null {
  const json = `{"${SCOPE_KEY}":${JSON.stringify(fields.scope)},"bodyDigest":${JSON.stringify(fields.bodyDigest)},"nonce":${JSON.stringify(nonce)}}`
  if (!ASCII.test(json)) return null
  return base64Url(utf8.encode(json))
}

/**
 * The problem body's JSON up to its closing brace, to which each challenge adds its id and code, as
 * `{...problem, challengeId, code}` writes them; null when the problem has either field already (then spread).
 */
function problemStartOf(problem: Record<string, unknown>): string | null {
  const json = JSON.stringify(problem)
  if ('challengeId' in problem || 'code' in problem || json === '{}') return null
  return `${json.slice(0, -1)},`
}

/** The 402 problem body: `problem` with the challenge's id and our code. */
const problemBody = (start: string | null, problem: () => Record<string, unknown>, id: string) =>
  start === null
    ? JSON.stringify({ ...problem(), challengeId: id, code: 'payment_required' })
    : `${start}"challengeId":${JSON.stringify(id)},"code":"payment_required"}`

/**
 * The 402 answers of paid orders without a credential, the same as mppx's charge handler writes them (the same
 * challenge fields, the same HMAC-SHA256 id over mppx's canonical binding input, the same problem body) without its
 * per-request work: the request is normalized by mppx once per price, payee and description, and a request only adds
 * its expiry, its scope and body digest, and the id. A template is used only once its challenge equals, byte for
 * byte, the one mppx makes for the same fields; otherwise that template's challenges are made by mppx every time.
 * Credentials are checked by mppx's handler (then settled by MppBroadcast.ts), so a challenge this issuer made is checked as any other.
 * @example const response = await challenges.respond({ amount: '0.01', recipient, description, scope, bodyDigest })
 */
export function mppChallenges(options: {
  secretKey: string
  /** mppx's challenge id: HMAC-SHA256 of `message` under `key` (both UTF-8), as base64url without padding. */
  hmac: (key: string, message: string) => string | Promise<string>
  load: () => Promise<ChallengeLibrary>
}) {
  // Each template by its price, payee and description: its making, replaced by the template once made, so a 402 that
  // finds it (and mppx's parts loaded) goes on without waiting a turn.
  const templates = new Map<string, Template | null | Promise<Template | null>>()
  let library: ChallengeLibrary | null = null
  // mppx's parts, loaded once (each 402 made a new set of them); a load that failed is tried again by the next 402.
  let loading: Promise<ChallengeLibrary> | null = null
  const loaded = () =>
    (loading ??= options.load().then(
      (parts) => (library = parts),
      (error: unknown) => {
        loading = null
        throw error
      },
    ))
  // Many 402s of one millisecond share its expiry's text.
  let expiry = { at: Number.NaN, text: '' }
  const expiresAt = (now: number) => {
    if (expiry.at !== now) expiry = { at: now, text: new Date(now + CHALLENGE_TTL_MS).toISOString() }
    return expiry.text
  }

  const opaqueOf = (library: ChallengeLibrary, fields: ChallengeFields, nonce: string) =>
    opaqueText(fields, nonce) ??
    library.serializeRecord({ ...metaOf(fields, nonce), [SCOPE_KEY]: fields.scope })

  /**
   * The id and header of the challenge for `fields` expiring at `expires`, from `template` (at once with a synchronous
   * HMAC).
   */
  function fromTemplate(template: Template, opaque: string, expires: string) {
    // mppx's binding input: realm|method|intent|request|expires|digest|opaque, with no digest.
    const signed = options.hmac(options.secretKey, `${template.bindingPrefix}${expires}||${opaque}`)
    const challenge = (id: string) => ({
      id,
      header: `Payment id="${id}", ${template.headerMiddle}, expires="${expires}", opaque="${opaque}"`,
    })
    return typeof signed === 'string' ? challenge(signed) : signed.then(challenge)
  }

  /** The template of `fields`' price, payee and description: as made, or its making (begun by the first 402). */
  function templateOf(parts: ChallengeLibrary, fields: ChallengeFields) {
    const key = `${fields.amount}\n${fields.recipient}\n${fields.description}`
    const kept = templates.get(key)
    if (kept !== undefined) return kept
    const making = makeTemplate(parts, fields)
    making.then(
      (template) => templates.get(key) === making && templates.set(key, template),
      () => templates.get(key) === making && templates.delete(key),
    )
    templates.set(key, making)
    if (templates.size > MAX_TEMPLATES) templates.delete(templates.keys().next().value as string)
    return making
  }

  /** The template for `fields`' price, payee and description, or null when it would not match mppx exactly. */
  async function makeTemplate(library: ChallengeLibrary, fields: ChallengeFields): Promise<Template | null> {
    const { amount, recipient, description } = fields
    const nonce = newNonce()
    const reference = await library.generate({
      amount,
      recipient,
      description,
      scope: fields.scope,
      meta: metaOf(fields, nonce),
    })
    const { realm, method, intent, request } = reference
    const blank = library.serializeChallenge({
      ...reference,
      id: '',
      expires: undefined,
      meta: undefined,
      opaque: undefined,
    })
    const prefix = 'Payment id="", '
    const problemStart = problemStartOf(library.paymentRequiredProblem(description))
    if (!blank.startsWith(prefix) || reference.expires === undefined || problemStart === null) return null
    const template: Template = {
      bindingPrefix: `${realm}|${method}|${intent}|${library.serializeRecord(request)}|`,
      headerMiddle: blank.slice(prefix.length),
      problemStart,
    }
    const ours = await fromTemplate(template, opaqueOf(library, fields, nonce), reference.expires)
    const same = ours.id === reference.id && ours.header === library.serializeChallenge(reference)
    return same ? template : null
  }

  return {
    /** The 402 answer for `fields`: a problem with `code: "payment_required"`, its challenge in WWW-Authenticate. */
    async respond(fields: ChallengeFields): Promise<Response> {
      const parts = library ?? (await loaded())
      const template = templateOf(parts, fields)
      const made = template instanceof Promise ? await template : template
      const expires = expiresAt(Date.now())
      const nonce = newNonce()
      const signed = made
        ? fromTemplate(made, opaqueOf(parts, fields, nonce), expires)
        : parts
            .generate({
              amount: fields.amount,
              recipient: fields.recipient,
              description: fields.description,
              scope: fields.scope,
              meta: metaOf(fields, nonce),
              expires,
            })
            .then((challenge) => ({ id: challenge.id, header: parts.serializeChallenge(challenge) }))
      const { id, header } = signed instanceof Promise ? await signed : signed
      const problem = () => parts.paymentRequiredProblem(fields.description)
      return new Response(problemBody(made?.problemStart ?? null, problem, id), {
        status: 402,
        headers: {
          'www-authenticate': header,
          'cache-control': 'no-store',
          'content-type': 'application/problem+json',
        },
      })
    },
  }
}
