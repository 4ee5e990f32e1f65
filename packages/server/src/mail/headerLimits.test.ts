import { describe, expect, test } from 'bun:test'
import { ORDER_MAIL_HEADER_LIMITS } from '@agentmarket/core'
import { headerLimitRefusal } from './headerLimits.ts'

const bytes = (text: string) => new TextEncoder().encode(text)
const { addresses, fields, headerBytes } = ORDER_MAIL_HEADER_LIMITS

/** A message whose header holds `lines` (CRLF line ends unless `lf`), a blank line and a short body. */
const message = (lines: string[], lf = false) =>
  bytes(`${lines.join(lf ? '\n' : '\r\n')}${lf ? '\n\n' : '\r\n\r\n'}{}`)
const list = (count: number) => Array.from({ length: count }, (_, i) => `r${i}@buyer.test`)

describe('headerLimitRefusal', () => {
  test('behavior: addresses are counted over every address field, folded lines included, up to the limit', () => {
    const folded = [
      'From: ann@buyer.test',
      `To: ${list(50).join(',\r\n ')}`,
      `Cc: ${list(addresses - 51).join(', ')}`,
    ]
    expect(headerLimitRefusal(message(folded))).toBeNull()
    expect(headerLimitRefusal(message([...folded, 'Bcc: one@buyer.test']))).toMatchObject({
      enhanced: '5.5.3',
    })
    expect(headerLimitRefusal(message([...folded, 'Resent-To: one@buyer.test']))).toMatchObject({
      enhanced: '5.5.3',
    })
    // Commas of other fields and of quoted display names are not addresses.
    const quoted = [
      'From: "Buyer, Ann" <ann@buyer.test>',
      `To: ${list(addresses - 1).join(',')}`,
      `X-Tags: ${','.repeat(500)}`,
    ]
    expect(headerLimitRefusal(message(quoted))).toBeNull()
    expect(headerLimitRefusal(message(quoted, true))).toBeNull()
    expect(
      headerLimitRefusal(
        message(['From: "a\\", b" <a@b.test>, c@d.test', `To: ${list(addresses - 1).join(',')}`]),
      ),
    ).toMatchObject({ enhanced: '5.5.3' })
  })

  test('behavior: header fields are counted up to the limit; the body is not read', () => {
    const many = (count: number) => Array.from({ length: count }, (_, i) => `X-H${i}: v`)
    expect(headerLimitRefusal(message(many(fields)))).toBeNull()
    expect(headerLimitRefusal(message(many(fields + 1)))).toMatchObject({
      reason: `more than ${fields} header fields`,
    })
    const body = `From: a@b.test\r\n\r\nTo: ${list(5000).join(',')}\r\n${many(5000).join('\r\n')}`
    expect(headerLimitRefusal(bytes(body))).toBeNull()
  })

  test(`behavior: a header block over ${headerBytes} bytes is refused, however it is folded`, () => {
    const longLine = `X-Long: ${'a'.repeat(headerBytes)}`
    expect(headerLimitRefusal(message([longLine]))).toMatchObject({
      reason: `a header block over ${headerBytes} bytes`,
    })
    const folds = `X-Long: ${Array.from({ length: headerBytes / 60 }, () => 'a'.repeat(70)).join('\r\n ')}`
    expect(headerLimitRefusal(message([folds]))).toMatchObject({ enhanced: '5.3.4' })
    expect(headerLimitRefusal(message([`X-Fits: ${'a'.repeat(headerBytes - 100)}`]))).toBeNull()
    // A message without a blank line is all header.
    expect(headerLimitRefusal(bytes(`From: a@b.test\r\n${'X: v\r\n'.repeat(900)}`))).toBeNull()
    expect(headerLimitRefusal(bytes(`X: ${'a'.repeat(headerBytes + 1)}`))).toMatchObject({
      enhanced: '5.3.4',
    })
  })
})
