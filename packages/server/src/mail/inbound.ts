import type { InboundOrderMail } from '@agentmarket/core'
import PostalMime, { type Email } from 'postal-mime'
import { BUYER_HEADERS } from './operations.ts'

/** A message the order mailbox takes but does not answer, and why. */
export type SkippedMail = { skip: 'automated' | 'no_sender' | 'own_mailbox' }

const ADDRESS = /^[^\s@<>]+@[^\s@<>]+$/

const header = (email: Email, name: string) =>
  email.headers
    .find((candidate) => candidate.key === name)
    ?.value.trim()
    .toLowerCase() ?? ''

/** A header's value as sent (trimmed, case kept), or null when absent or empty. */
const rawHeader = (email: Email, name: string) =>
  email.headers.find((candidate) => candidate.key === name)?.value.trim() || null

/** The buyer agent a mail orders for (Agentmarket-Buyer) with its API key (Agentmarket-Buyer-Key), if it names one. */
function buyerOf(email: Email): Pick<InboundOrderMail, 'buyer'> {
  const name = rawHeader(email, BUYER_HEADERS.name)
  return name === null ? {} : { buyer: { name, key: rawHeader(email, BUYER_HEADERS.key) } }
}

/** Bounces, auto-replies and list mail (RFC 3834): answering them could start a mail loop. */
function isAutomated(email: Email, envelopeFrom: string | null): boolean {
  const autoSubmitted = header(email, 'auto-submitted')
  return (
    envelopeFrom === null ||
    (autoSubmitted !== '' && autoSubmitted !== 'no') ||
    ['bulk', 'junk', 'list'].includes(header(email, 'precedence')) ||
    header(email, 'list-id') !== ''
  )
}

/** The Message-IDs in a References header. */
function messageIds(text: string | undefined): string[] {
  return text?.match(/<[^<>\s]+>/g) ?? []
}

/**
 * Decodes a raw order e-mail (MIME, any transfer encoding) into what the core takes: the sender is the From address
 * (else the envelope sender); a message without a Message-ID gets one derived from its bytes, so a second delivery of
 * the same bytes is still recognised.
 */
export async function readOrderMail(
  raw: Uint8Array,
  envelopeFrom: string | null,
  mailbox: string,
): Promise<InboundOrderMail | SkippedMail> {
  const email = await PostalMime.parse(raw)
  if (isAutomated(email, envelopeFrom)) return { skip: 'automated' }
  const from = (email.from?.address || envelopeFrom || '').trim()
  if (!ADDRESS.test(from)) return { skip: 'no_sender' }
  if (from.toLowerCase() === mailbox.toLowerCase()) return { skip: 'own_mailbox' }
  const digest = new Bun.CryptoHasher('sha256').update(raw).digest('hex')
  return {
    messageId: email.messageId?.trim() || `<${digest}@derived.invalid>`,
    from,
    subject: email.subject ?? '',
    text: email.text ?? null,
    references: messageIds(email.references),
    ...buyerOf(email),
  }
}
