import { type Browser, chromium } from 'playwright-core'
import { SYSTEM_PACKAGES } from '../../scripts/system-deps.ts'

/** Where the browser tests leave their screenshots (ignored by git). */
export const ARTIFACTS = new URL('../browser/artifacts/', import.meta.url).pathname

/** Debian's headless Chromium, driven by playwright-core; no browser download, no network beyond loopback. */
export function launchChromium(): Promise<Browser> {
  const executablePath = Bun.which(SYSTEM_PACKAGES.chromium.command)
  if (!executablePath)
    throw new Error('Chromium is not on PATH: `bun run test` installs it (scripts/system-deps.ts)')
  return chromium.launch({
    executablePath,
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
