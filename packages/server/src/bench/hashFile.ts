import { readFileSync } from 'node:fs'
import type { Hex } from 'viem'

/** A hashes file that cannot be read or holds something else than hashes; `message` names the file and line. */
export class HashFileError extends Error {
  override readonly name = 'HashFileError'
}

const TX_HASH = /^0x[0-9a-fA-F]{64}$/

/**
 * The transaction hashes of the file at `path`, one 0x hash per line, in order; blank lines are skipped. Throws
 * HashFileError for a file that cannot be read, a line that is not a hash, or no hash at all.
 * @example readHashFile('hashes.txt') // ['0x5c50…', …]
 */
export function readHashFile(path: string): Hex[] {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as { code?: string }).code
    throw new HashFileError(`cannot read the hashes file ${path}${code ? ` (${code})` : ''}`)
  }
  const hashes: Hex[] = []
  for (const [index, line] of text.split('\n').entries()) {
    const word = line.trim()
    if (word === '') continue
    if (!TX_HASH.test(word))
      throw new HashFileError(
        `${path} line ${index + 1}: "${word.slice(0, 80)}" is not a transaction hash (0x and 64 hex digits)`,
      )
    hashes.push(word as Hex)
  }
  if (hashes.length === 0) throw new HashFileError(`${path} holds no transaction hash`)
  return hashes
}
