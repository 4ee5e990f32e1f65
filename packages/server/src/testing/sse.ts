/** Reads server-sent events from a streaming response, one parsed `data:` JSON per event. */
export function sseReader(response: Response) {
  if (!response.body) throw new Error('no body to stream')
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const frames: { id?: string; data: Record<string, unknown> }[] = []

  /** Waits until `count` events have arrived in total, or fails after `timeoutMs`. */
  async function waitFor(count: number, timeoutMs = 2000) {
    const deadline = performance.now() + timeoutMs
    while (frames.length < count) {
      const left = deadline - performance.now()
      if (left <= 0) throw new Error(`only ${frames.length} of ${count} events within ${timeoutMs} ms`)
      const chunk = await Promise.race([reader.read(), Bun.sleep(left).then(() => null)])
      if (!chunk) continue
      if (chunk.done) throw new Error(`stream ended after ${frames.length} events`)
      buffer += decoder.decode(chunk.value, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((line) => !line.startsWith(':') && line.includes(':'))
            .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
        )
        if (fields.data) frames.push({ id: fields.id, data: JSON.parse(fields.data) })
        end = buffer.indexOf('\n\n')
      }
    }
    return frames.slice(0, count)
  }

  return { frames, waitFor, cancel: () => reader.cancel() }
}
