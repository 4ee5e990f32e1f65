import { closestName } from '@agentmarket/core'

/** A mistake on the command line: the one line for standard error, and exit code 2. */
export type UsageError = { kind: 'usage error'; message: string }

/** Where the top-level help is, the end of every mistake's line outside a sub-command. */
export const MAIN_HELP = 'agentmarket --help for the commands'

/** A usage error saying `what`, then where `help` is. */
export function usageError(what: string, help = MAIN_HELP): UsageError {
  return { kind: 'usage error', message: `agentmarket: ${what}; run ${help}` }
}

/**
 * The known word closest to `word`, when one is close enough to be what was meant (core's closestName, the rule API
 * fields use too); a one-letter word gets none (`-x` is not `-h` mistyped).
 */
function closest(word: string, known: readonly string[]): string | null {
  const bare = (text: string) => text.replace(/^-+/, '').toLowerCase()
  if (bare(word).length <= 1) return null
  const near = closestName(bare(word), known.map(bare))
  return known.find((candidate) => bare(candidate) === near) ?? null
}

/** The one line a mistyped word gets: what was not understood, the closest known word, and where help is. */
export function unknownWord(
  what: string,
  word: string,
  known: readonly string[],
  help = MAIN_HELP,
): UsageError {
  const suggestion = closest(word, known)
  const hint = suggestion ? ` (did you mean "${suggestion}"?)` : ''
  return usageError(`unknown ${what} "${word}"${hint}`, help)
}
