import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HashFileError, readHashFile } from './hashFile.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-hashes-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** A file in the test's folder holding `text`. */
function file(name: string, text: string): string {
  const path = join(folder, name)
  writeFileSync(path, text)
  return path
}

const first = `0x${'ab'.repeat(32)}`
const second = `0x${'CD'.repeat(32)}`

describe('readHashFile', () => {
  test('behavior: one hash a line, in order, blank lines, spaces and CRLF endings skipped', () => {
    expect(readHashFile(file('ok.txt', `${first}\r\n\n  ${second}  \n`))).toEqual([first, second] as never)
  })

  test('error: a file that is missing, a line that is not a hash, or no hash at all names the file and line', () => {
    const cases: [string, RegExp][] = [
      [join(folder, 'missing.txt'), /^cannot read the hashes file .*missing\.txt \(ENOENT\)$/],
      [
        file('csv.txt', `${first}\n${second},0xseller,100\n`),
        /csv\.txt line 2: ".*,100" is not a transaction hash/,
      ],
      [
        file('short.txt', '0x1234\n'),
        /short\.txt line 1: "0x1234" is not a transaction hash \(0x and 64 hex/,
      ],
      [file('empty.txt', '\n\n'), /empty\.txt holds no transaction hash$/],
    ]
    for (const [path, message] of cases) {
      expect(() => readHashFile(path)).toThrow(HashFileError)
      expect(() => readHashFile(path)).toThrow(message)
    }
  })
})
