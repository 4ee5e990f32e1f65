import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { AddressInfo } from 'node:net'
import tls from 'node:tls'
import { fetchWebhookTransport } from '../../packages/server/src/webhooks/transport.ts'
import { RECEIVER_TEST_CERT, RECEIVER_TEST_KEY } from '../support/tlsCertificate.ts'

/** A TLS receiver on 127.0.0.1 that counts TCP connections and answers 204 to each request it reads. */
function tlsReceiver() {
  const seen = { connections: 0, servernames: [] as (string | false | null)[] }
  const server = tls.createServer({ key: RECEIVER_TEST_KEY, cert: RECEIVER_TEST_CERT }, (socket) => {
    seen.servernames.push(socket.servername)
    socket.once('data', () => socket.end('HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n'))
    socket.on('error', () => {})
  })
  server.on('connection', () => {
    seen.connections++
  })
  server.on('tlsClientError', () => {})
  const ready = new Promise<number>((listening) =>
    server.listen(0, '127.0.0.1', () => listening((server.address() as AddressInfo).port)),
  )
  return { seen, ready, close: () => new Promise<void>((closed) => server.close(() => closed())) }
}

describe('webhooks over HTTPS connect to the address checked (DNS rebinding)', () => {
  const receiver = tlsReceiver()
  let port = 0
  const defaultCas = tls.getCACertificates('default')
  beforeAll(async () => {
    port = await receiver.ready
  })
  afterAll(async () => {
    tls.setDefaultCACertificates(defaultCas)
    await receiver.close()
  })

  test(
    'attack: a name checked public that the system resolves to loopback never reaches the loopback receiver',
    async () => {
      // The check sees a public address; `localhost` resolved again by the system would be 127.0.0.1, as a
      // TTL-0 rebinding name would be on its second question.
      const transport = fetchWebhookTransport({ allowPrivate: false, resolve: async () => ['8.8.8.8'] })
      await expect(transport.post(`https://localhost:${port}/hook`, {}, '{}')).rejects.toThrow()
      expect(receiver.seen.connections).toBe(0)
    },
    { timeout: 20_000 },
  )

  test('HTTPS goes to the checked address with the name as SNI, and the certificate is checked against the name', async () => {
    tls.setDefaultCACertificates([...defaultCas, RECEIVER_TEST_CERT])
    const before = receiver.seen.connections
    // `receiver.test` has no DNS record: only a connection to the checked address can reach the receiver.
    const named = fetchWebhookTransport({ allowPrivate: true, resolve: async () => ['127.0.0.1'] })
    expect((await named.post(`https://receiver.test:${port}/hook`, {}, '{}')).status).toBe(204)
    expect(receiver.seen.servernames.at(-1)).toBe('receiver.test')
    // The same receiver under another name: the connection is made, the certificate (for receiver.test) refused.
    await expect(named.post(`https://other.test:${port}/hook`, {}, '{}')).rejects.toThrow(/connection/)
    expect(receiver.seen.connections).toBe(before + 2)
  })
})
