#!/usr/bin/env bun
/**
 * The `agentmarket` command (`bun start`, the single binary): reads the command line, then loads only what the
 * command needs, so help, the version and a mistyped word answer at once and never open a database or a port.
 */
import { benchUsage } from './bench/benchLine.ts'
import { parseCommandLine, serveCommand, usage } from './cli.ts'
import type { Settings } from './env.ts'
import { VERSION } from './version.ts'

/** The settings from the environment, or exit 1 after one line naming the malformed variable. */
async function settingsOrExit(): Promise<Settings> {
  const { readSettings, SettingsError } = await import('./env.ts')
  try {
    return readSettings(process.env)
  } catch (error) {
    if (!(error instanceof SettingsError)) throw error
    console.error(`agentmarket: ${error.message}`)
    process.exit(1)
  }
}

/** Runs what the command line asks for; resolves when a command that exits has set its exit code. */
async function main(words: string[]) {
  const line = parseCommandLine(words)
  if (line.kind === 'usage error') {
    console.error(line.message)
    process.exit(2)
  }
  if (line.kind === 'version') return console.log(VERSION)
  if (line.kind === 'bench help') return process.stdout.write(benchUsage())
  if (line.kind === 'command' && line.command === 'help') return process.stdout.write(usage(VERSION))
  const settings = await settingsOrExit()
  if (line.kind === 'bench verify') {
    const { runVerifyBench } = await import('./bench/verifyCommand.ts')
    process.exit(await runVerifyBench(line.options, settings, process.env))
  }
  if (line.kind === 'copy') {
    const { runCopy } = await import('./copy/copyCommand.ts')
    try {
      process.exit(await runCopy(settings, line.target))
    } catch (error) {
      console.error(`agentmarket: cannot copy: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    }
  }
  if (line.command === 'dev') {
    const { runDev } = await import('./dev/devCommand.ts')
    return runDev(settings.port)
  }
  if (line.command === 'demo') {
    const { runDemo } = await import('./demo.ts')
    process.exit(await runDemo(settings, serveCommand(process.env)))
  }
  try {
    if (line.command === 'migrate')
      process.exit(await (await import('./migrateCommand.ts')).runMigrate(settings))
    await (await import('./serve.ts')).serve(settings)
  } catch (error) {
    const doing = line.command === 'migrate' ? 'migrate' : 'start'
    console.error(`agentmarket: cannot ${doing}: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
}

await main(process.argv.slice(2))
