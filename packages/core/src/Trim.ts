// Trimming a run of one character from an end of a text, in one pass. A regular expression such as `/\.+$/` is
// tried at every position of a long run and scans the run to its end each time (quadratic: 2,000 dots in a webhook
// URL's host cost 10 ms, 64,000 cost 1.7 s); tests/security/costGuard.test.ts refuses such expressions in the code.

/** `text` without the `char`s it ends with: `withoutTrailing("a.b..", ".")` is "a.b". */
export function withoutTrailing(text: string, char: string): string {
  let end = text.length
  while (end > 0 && text[end - 1] === char) end--
  return text.slice(0, end)
}

/** `text` without the `char`s it starts or ends with. */
export function withoutEnds(text: string, char: string): string {
  let start = 0
  while (start < text.length && text[start] === char) start++
  return withoutTrailing(text.slice(start), char)
}
