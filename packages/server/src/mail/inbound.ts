import type { InboundOrderMail } from '@agentmarket/core'
import { ORDER_MAIL_HEADER_LIMITS } from '@agentmarket/core'
import PostalMime, { type Email } from 'postal-mime'
import { MimeLimitError } from './headerLimits.ts'
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

/** postal-mime's own limits, as ORDER_MAIL_HEADER_LIMITS states them: headers of all parts, and nesting. */
const MIME_LIMITS = {
  maxHeadersSize: ORDER_MAIL_HEADER_LIMITS.headerBytes,
  maxNestingDepth: ORDER_MAIL_HEADER_LIMITS.mimeDepth,
}

/** Decodes `raw` within MIME_LIMITS; a part past them throws MimeLimitError. */
async function decode(raw: Uint8Array): Promise<Email> {
  try {
    return await PostalMime.parse(raw, MIME_LIMITS)
  } catch (error) {
    // postal-mime says which limit only in its message ("Maximum MIME nesting depth of …", "Maximum header size …").
    const message = error instanceof Error ? error.message : ''
    if (message.startsWith('Maximum MIME nesting depth'))
      throw new MimeLimitError({
        enhanced: '5.3.4',
        reason: `MIME parts nested more than ${ORDER_MAIL_HEADER_LIMITS.mimeDepth} deep`,
      })
    if (message.startsWith('Maximum header size'))
      throw new MimeLimitError({
        enhanced: '5.3.4',
        reason: `headers of all MIME parts over ${ORDER_MAIL_HEADER_LIMITS.headerBytes} bytes`,
      })
    throw error
  }
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
  const email = await decode(raw)
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
