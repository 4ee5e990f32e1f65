/**
 * Writes that arrive while a commit is running, or in the same turn of the event loop, go in together: one
 * transaction (and one sync to disk) for many callers, each answered only once its write is committed. A lone write
 * waits one turn of the event loop.
 * @example const beat = groupCommit((items) => writeAll(items)); await beat(item)
 */
export function groupCommit<Item, Result>(flush: (items: Item[]) => Promise<Result[]>) {
  type Waiting = { item: Item; resolve: (result: Result) => void; reject: (error: unknown) => void }
  let queue: Waiting[] = []
  let running = false

  const drain = async () => {
    while (queue.length > 0) {
      const batch = queue
      queue = []
      try {
        const results = await flush(batch.map(({ item }) => item))
        for (const [index, { resolve }] of batch.entries()) resolve(results[index] as Result)
      } catch (error) {
        for (const { reject } of batch) reject(error)
      }
    }
    running = false
  }

  return (item: Item): Promise<Result> =>
    new Promise<Result>((resolve, reject) => {
      queue.push({ item, resolve, reject })
      if (running) return
      running = true
      // One turn of the event loop first: requests already read from the sockets join this commit.
      setImmediate(() => void drain())
    })
}
