import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { A2A_METHOD_NAMES, A2A_METHODS, type A2aMethod } from './methods.ts'

const A2A_DOC = join(import.meta.dir, '../../../../docs/a2a.md')

/** The rows of docs/a2a.md's "Who may call what" table: the operations each names, and the rate class it gives. */
function documentedRates(markdown: string) {
  const lines = markdown.slice(markdown.indexOf('### Who may call what')).split('\n')
  const start = lines.findIndex((line) => line.startsWith('|'))
  const end = lines.findIndex((line, index) => index > start && !line.startsWith('|'))
  // The first table of the section, without its header and rule.
  return lines.slice(start + 2, end).map((line) => {
    const [names = '', , rate = ''] = line.split('|').slice(1)
    return { operations: operationsNamed(names), rate: rate.trim() }
  })
}

/**
 * The operations a cell names: "(the card)" for the one without a JSON-RPC method, else each `Name` in backquotes,
 * where `…Name(s)` stands for every method ending in Name or Names.
 */
function operationsNamed(cell: string): A2aMethod[] {
  if (cell.includes('(the card)')) return A2A_METHOD_NAMES.filter((method) => !A2A_METHODS[method].jsonRpc)
  return [...cell.matchAll(/`([^`]+)`/g)].flatMap(([, name = '']) => {
    const pattern = new RegExp(`^${name.replace('…', '.*').replace('(s)', 's?')}$`)
    const found = A2A_METHOD_NAMES.filter((method) => pattern.test(A2A_METHODS[method].jsonRpc ?? ''))
    expect(found.length, `docs/a2a.md names ${name}, which no operation of methods.ts is`).toBeGreaterThan(0)
    return found
  })
}

describe('the A2A table and its documentation', () => {
  test('behavior: docs/a2a.md gives every operation once, with the rate class A2A_METHODS charges', () => {
    const rows = documentedRates(readFileSync(A2A_DOC, 'utf8'))
    const documented = rows.flatMap((row) => row.operations)
    expect(documented.sort()).toEqual([...A2A_METHOD_NAMES].sort())
    for (const row of rows)
      for (const method of row.operations) {
        // An operation charged by what its request asks for (`tokens`) is written "class × n".
        const { rate, tokens } = A2A_METHODS[method]
        const charged = tokens ? `${rate} × n` : rate
        expect(row.rate, `docs/a2a.md, ${method}: the table charges ${charged}`).toBe(charged)
      }
  })
})
