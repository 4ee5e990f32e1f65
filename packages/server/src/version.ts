import serverPackage from '../package.json' with { type: 'json' }

/** The server's release version, from its package.json (bundled into the binary). */
export const VERSION: string = serverPackage.version
