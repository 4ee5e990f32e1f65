// A Bun TypeScript project mounting the server package: tests/packages/install.test.ts type-checks it inside the
// project that installed the tarballs with bun, under a tsconfig like `bun init` writes. The server ships its
// TypeScript source, so this checks that source compiles in someone else's project. Never run.
import { defaultConfig, Marketplace, memoryStore } from '@agentmarket/core'
import { type AppDeps, createApp } from '@agentmarket/server'

/** The server's app over an in-memory market (types only: never called). */
export function marketApp(baseUrl: string) {
  const deps: AppDeps = {
    market: Marketplace.create({ store: memoryStore(), config: defaultConfig(baseUrl) }),
    baseUrl,
  }
  const app = createApp(deps)
  // @ts-expect-error the app is an object, never a string: this fails if createApp's types were `any`
  const wrong: string = app
  return { app, wrong }
}
