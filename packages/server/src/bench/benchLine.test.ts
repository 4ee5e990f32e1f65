import { describe, expect, test } from 'bun:test'
import { benchUsage, parseBenchLine } from './benchLine.ts'

describe('parseBenchLine', () => {
  test('behavior: verify with generated or listed payments, --rpc, --runs (3 by default) and --json, in any order', () => {
    expect(parseBenchLine(['verify', '--generate', '2000'])).toEqual({
      kind: 'bench verify',
      options: { input: { kind: 'generate', count: 2000 }, rpc: null, runs: 3, json: false },
    })
    expect(
      parseBenchLine([
        '--json',
        '--hashes=list.txt',
        'verify',
        '--rpc',
        'https://rpc.example/v2/key',
        '--runs',
        '5',
      ]),
    ).toEqual({
      kind: 'bench verify',
      options: {
        input: { kind: 'hashes', path: 'list.txt' },
        rpc: 'https://rpc.example/v2/key',
        runs: 5,
        json: true,
      },
    })
    for (const words of [['--help'], ['-h'], ['verify', '--help'], ['nonsense', '-h']])
      expect(parseBenchLine(words)).toEqual({ kind: 'bench help' })
  })

  test('error: a mistake or a missing input is one line naming it, the closest word if one is near, and bench --help', () => {
    const cases: [string[], string][] = [
      [[], 'agentmarket: bench needs the name of a benchmark: verify; run agentmarket bench --help'],
      [['verfy'], 'unknown benchmark "verfy" (did you mean "verify"?)'],
      [['http'], 'unknown benchmark "http"; run agentmarket bench --help'],
      [['verify'], 'bench verify needs --generate N or --hashes FILE'],
      [['verify', '--generat', '5'], 'unknown option "--generat" (did you mean "--generate"?)'],
      [['verify', '--hash', 'a.txt'], 'unknown option "--hash" (did you mean "--hashes"?)'],
      [['verify', '-x'], 'unknown option "-x"; run'],
      [['verify', '--generate', '5', '--hashes', 'a.txt'], '--generate N or --hashes FILE, not both'],
      [['verify', '--generate'], '--generate needs a value'],
      [['verify', '--hashes', '--json'], '--hashes needs a value'],
      [['verify', '--generate', '0'], '--generate "0" must be a whole number from 1 to 100,000'],
      [['verify', '--generate', '100001'], 'from 1 to 100,000'],
      [['verify', '--generate', '1e3'], '--generate "1e3" must be a whole number'],
      [['verify', '--generate', '5', '--runs', '0'], '--runs "0" must be a whole number from 1 to 100'],
      [
        ['verify', '--generate', '5', '--rpc', 'localhost:8545'],
        '--rpc "localhost:8545" must be an http(s) URL',
      ],
      [['verify', '--generate', '5', '--json=yes'], '--json takes no value'],
      [['verify', 'now', '--generate', '5'], 'unexpected argument "now" after bench verify'],
    ]
    for (const [words, expected] of cases) {
      const line = parseBenchLine(words)
      expect(line.kind, words.join(' ')).toBe('usage error')
      const message = line.kind === 'usage error' ? line.message : ''
      expect(message, words.join(' ')).toContain(expected)
      expect(message, words.join(' ')).toStartWith('agentmarket: ')
      expect(message).toEndWith('run agentmarket bench --help for the benchmarks and their options')
      expect(message).not.toContain('\n')
    }
  })
})

describe('benchUsage', () => {
  test('behavior: names every option and says what a hashes file is checked against', () => {
    const text = benchUsage()
    for (const word of ['--generate N', '--hashes FILE', '--rpc URL', '--runs N', '--json', '--help'])
      expect(text).toContain(word)
    for (const word of [
      'CHAIN_RPC_URL',
      'CHAIN_ID',
      'USDC_CONTRACT',
      'MIN_CONFIRMATIONS',
      'any seller',
      'pending',
    ])
      expect(text).toContain(word)
  })
})
