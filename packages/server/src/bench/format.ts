/** Milliseconds as text with sensible precision. */
export const formatMs = (ms: number) =>
  ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`

/** A whole number with thousands separators. */
export const formatCount = (value: number) => Math.round(value).toLocaleString('en')
