import { A2A_JWKS_PATH, type CardSigner, type KvStore } from '@agentmarket/core'
import type { JWK } from 'jose'

const KEY_SETTING = 'setting:a2a_card_signing_key'

// The A2A SDK and jose load on the first card signed, not when the server starts.
const loadSigning = () => Promise.all([import('@a2a-js/sdk'), import('jose')])

/** A new P-256 signing key as a private JWK (Web Crypto), with its thumbprint as `kid`. */
async function newKey(): Promise<JWK> {
  const [, { calculateJwkThumbprint }] = await loadSigning()
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])
  const jwk = (await crypto.subtle.exportKey('jwk', pair.privateKey)) as JWK
  const { kty, crv, x, y, d } = jwk
  return { kty, crv, x, y, d, alg: 'ES256', kid: await calculateJwkThumbprint({ kty, crv, x, y }) }
}

/**
 * The marketplace's card signer: an ES256 key made once and kept in the store (as the MPP secret is, so every node
 * signs with it), or `configured` (a private JWK, A2A_CARD_SIGNING_KEY); signatures by @a2a-js/sdk's
 * generateAgentCardSignature (JWS over the card's JCS form), naming the key (`kid`) and the JWKS (`jku`).
 */
export function cardSigner(store: KvStore, baseUrl: string, configured?: JWK): CardSigner {
  let key: Promise<JWK> | null = null
  const keyOf = () => {
    key ??= configured
      ? Promise.resolve(configured)
      : newKey().then((fresh) =>
          store.kvUpdate(KEY_SETTING, (current) =>
            current !== null && typeof current === 'object'
              ? { op: 'noop', result: current as JWK }
              : { op: 'set', value: fresh, result: fresh },
          ),
        )
    return key
  }
  type Signer = Awaited<ReturnType<typeof loadSigning>>[0]['generateAgentCardSignature']
  let sign: Promise<ReturnType<Signer>> | null = null
  return {
    async sign(card) {
      const [{ AgentCard, generateAgentCardSignature }] = await loadSigning()
      sign ??= keyOf().then((jwk) =>
        generateAgentCardSignature(jwk, {
          alg: 'ES256',
          kid: jwk.kid,
          typ: 'JOSE',
          jku: `${baseUrl}${A2A_JWKS_PATH}`,
        }),
      )
      const { signatures: _unsigned, ...fields } = card as { signatures?: unknown }
      const signed = await (await sign)(AgentCard.fromJSON(fields))
      return (
        (AgentCard.toJSON(signed) as { signatures?: { protected: string; signature: string }[] })
          .signatures ?? []
      )
    },
    async publicKeys() {
      const { d: _private, ...publicKey } = await keyOf()
      return [{ ...publicKey, use: 'sig' }]
    },
  }
}
