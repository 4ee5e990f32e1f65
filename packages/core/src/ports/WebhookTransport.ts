/** What one webhook attempt got back: the receiver's HTTP status (any: the core decides what counts). */
export type WebhookResponse = { status: number }

/**
 * Sends one signed webhook request (POST, the body as given). Rejects, with a reason in its message, when no answer
 * came: the address is refused (SSRF rules), the connection failed, or it timed out.
 */
export type WebhookTransport = {
  /** POSTs `body` with `headers` to `url`. */
  post(url: string, headers: Record<string, string>, body: string): Promise<WebhookResponse>
}
