import { describe, expect, test } from 'bun:test'
// mppx does not export its attribution encoder; its file is what mppx clients write on chain.
import * as Attribution from '../../../../node_modules/mppx/dist/tempo/Attribution.js'
import { isMemoBoundTo } from './MppMemo.ts'

const memo = (challengeId: string, serverId = 'market.example', clientId?: string) =>
  Attribution.encode({ challengeId, serverId, clientId }) as `0x${string}`

describe('isMemoBoundTo', () => {
  test('behavior: the memo an mppx client writes binds its realm and challenge, whatever its client id', () => {
    expect(isMemoBoundTo(memo('challenge-1'), 'market.example', 'challenge-1')).toBe(true)
    expect(isMemoBoundTo(memo('challenge-1', 'market.example', 'app'), 'market.example', 'challenge-1')).toBe(
      true,
    )
  })

  test('error: another challenge, another realm, a plain memo or a malformed one is not bound', () => {
    expect(isMemoBoundTo(memo('challenge-2'), 'market.example', 'challenge-1')).toBe(false)
    expect(isMemoBoundTo(memo('challenge-1', 'other.example'), 'market.example', 'challenge-1')).toBe(false)
    expect(isMemoBoundTo(`0x${'00'.repeat(32)}`, 'market.example', 'challenge-1')).toBe(false)
    const versionTwo =
      `${memo('challenge-1').slice(0, 10)}02${memo('challenge-1').slice(12)}` as `0x${string}`
    expect(isMemoBoundTo(versionTwo, 'market.example', 'challenge-1')).toBe(false)
    expect(
      isMemoBoundTo(memo('challenge-1').slice(0, 64) as `0x${string}`, 'market.example', 'challenge-1'),
    ).toBe(false)
  })
})
