import { type Browser, chromium } from 'playwright-core'

/** Where the browser tests leave their screenshots (ignored by git). */
export const ARTIFACTS = new URL('../browser/artifacts/', import.meta.url).pathname

/** Debian's headless Chromium, driven by playwright-core; no browser download, no network beyond loopback. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  })
}
