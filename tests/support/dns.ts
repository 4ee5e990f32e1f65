import dns2 from 'dns2'
import { freePort } from './process.ts'

/** A DNS server on loopback answering TXT questions from a table (every other question: no records). */
export type TestDns = { server: string; stop(): Promise<void> }

/** Starts a UDP DNS server on 127.0.0.1 whose TXT records are `txt` (names in lower case, no trailing dot). */
export async function startTestDns(txt: Record<string, string[]>): Promise<TestDns> {
  const { Packet } = dns2
  const port = freePort()
  const server = dns2.createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request)
      for (const question of request.questions) {
        const name = question.name.toLowerCase().replace(/\.$/, '')
        if ((question as { type?: number }).type !== Packet.TYPE.TXT) continue
        for (const data of txt[name] ?? []) {
          const record = { name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data }
          // dns2's typings want a Resource instance; its encoder reads these plain fields.
          response.answers.push(record as unknown as (typeof response.answers)[number])
        }
      }
      send(response)
    },
  })
  await server.listen({ udp: { port, address: '127.0.0.1' } })
  return { server: `127.0.0.1:${port}`, stop: () => server.close() }
}
