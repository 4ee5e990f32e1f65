/** A time as its epoch-milliseconds column; null stays null. */
export const ms = (date: Date | null | undefined): number | null => date?.getTime() ?? null

/** An epoch-milliseconds column as a time; null stays null. */
export const dateOf = (value: number | null): Date | null => (value === null ? null : new Date(value))
