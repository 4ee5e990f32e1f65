import { describe, expect, test } from 'bun:test'
import { parseCommandLine, serveCommand, usage } from './cli.ts'

describe('parseCommandLine', () => {
  test('behavior: each command by its word, serve when none is given, help and version as options', () => {
    expect(parseCommandLine([])).toEqual({ kind: 'command', command: 'serve' })
    for (const command of ['serve', 'demo', 'migrate', 'help'] as const)
      expect(parseCommandLine([command])).toEqual({ kind: 'command', command })
    expect(parseCommandLine(['copy', 'postgres://db/market'])).toEqual({
      kind: 'copy',
      target: 'postgres://db/market',
    })
    for (const words of [['--help'], ['-h'], ['demo', '--help'], ['--help', 'nonsense']])
      expect(parseCommandLine(words)).toEqual({ kind: 'command', command: 'help' })
    for (const words of [['--version'], ['-v']]) expect(parseCommandLine(words)).toEqual({ kind: 'version' })
  })

  test('behavior: a mistake is one line naming the word, the closest command or option if one is near, and --help', () => {
    const cases: [string[], string][] = [
      [
        ['serv'],
        'agentmarket: unknown command "serv" (did you mean "serve"?); run agentmarket --help for the commands',
      ],
      [['migrat'], 'unknown command "migrat" (did you mean "migrate"?)'],
      [['dmeo'], 'unknown command "dmeo" (did you mean "demo"?)'],
      [['--hlep'], 'unknown option "--hlep" (did you mean "--help"?)'],
      [['--verison'], 'unknown option "--verison" (did you mean "--version"?)'],
      [['start'], 'unknown command "start"; run agentmarket --help'],
      [['-x'], 'unknown option "-x"; run agentmarket --help'],
      [['demo', 'now'], 'unexpected argument "now" after demo'],
      [['--version=2'], '--version takes no value'],
      [['--port', '8080'], 'unknown option "--port"; run agentmarket --help'],
    ]
    for (const [words, expected] of cases) {
      const line = parseCommandLine(words)
      expect(line.kind, words.join(' ')).toBe('usage error')
      const message = line.kind === 'usage error' ? line.message : ''
      expect(message, words.join(' ')).toContain(expected)
      expect(message).toContain('agentmarket --help')
      expect(message).not.toContain('\n')
    }
  })

  test('behavior: the help names every command, both options, the main variables and where the rest is', () => {
    const text = usage('9.8.7')
    expect(text).toStartWith('agentmarket 9.8.7')
    for (const word of [
      'serve',
      'demo',
      'migrate',
      '--help',
      '--version',
      'DATABASE_URL',
      'PORT',
      'README.md',
    ])
      expect(text).toContain(word)
  })
})

describe('parseCommandLine bench', () => {
  test('behavior: the words after bench are the benchmark’s, help before it is the main help', () => {
    expect(parseCommandLine(['bench', 'verify', '--generate', '5', '--json'])).toEqual({
      kind: 'bench verify',
      options: { input: { kind: 'generate', count: 5 }, rpc: null, runs: 3, json: true },
    })
    expect(parseCommandLine(['bench', '--help'])).toEqual({ kind: 'bench help' })
    expect(parseCommandLine(['--help', 'bench', 'verify'])).toEqual({ kind: 'command', command: 'help' })
    expect(usage('1.0.0')).toContain('bench')
  })

  test('error: bench alone, or an option of bench given to the main command line, is a usage error', () => {
    expect(parseCommandLine(['bench'])).toMatchObject({
      kind: 'usage error',
      message: expect.stringContaining('bench needs the name of a benchmark: verify'),
    })
    expect(parseCommandLine(['--generate', '5', 'bench'])).toMatchObject({
      kind: 'usage error',
      message: expect.stringContaining('unknown option "--generate"'),
    })
  })
})

describe('serveCommand', () => {
  test('behavior: names the database and address that were set, in words a shell reads back as they were', async () => {
    expect(serveCommand({})).toBe('bun start')
    expect(serveCommand({ DATABASE_URL: 'file:/srv/market.db', LOG_LEVEL: 'warn' })).toBe(
      'DATABASE_URL=file:/srv/market.db bun start',
    )
    const awkward = "file:/tmp/it's a $HOME `x`.db"
    const command = serveCommand({ DATABASE_URL: awkward, PORT: '8080', DATABASE_AUTH_TOKEN: 'secret-token' })
    expect(command).not.toContain('secret-token')
    expect(command).toContain('DATABASE_AUTH_TOKEN=…')
    // The shell's own reading of the words: `env` in place of the program prints what it was given.
    const shell = Bun.spawn(['sh', '-c', command.replace(/ bun start$/, ' env')], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      stdout: 'pipe',
    })
    const printed = (await new Response(shell.stdout).text()).split('\n')
    expect(printed).toContain(`DATABASE_URL=${awkward}`)
    expect(printed).toContain('PORT=8080')
  })

  test('behavior: a PostgreSQL URL is named without its password', () => {
    const command = serveCommand({ DATABASE_URL: 'postgres://market:s3cret@db.internal:5432/market' })
    expect(command).toBe('DATABASE_URL=postgres://market:…@db.internal:5432/market bun start')
  })
})
