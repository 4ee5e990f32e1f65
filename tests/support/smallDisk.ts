import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A small tmpfs mounted at a new folder, or why it could not be (not root, no mount in this container). */
export function mountSmallDisk(size: string): { path: string } | { refused: string } {
  const path = mkdtempSync(join(tmpdir(), 'agentmarket-full-disk-'))
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', path], {
    stderr: 'pipe',
  })
  if (mounted.exitCode === 0) return { path }
  rmSync(path, { recursive: true, force: true })
  return { refused: mounted.stderr.toString().trim() || `mount exited ${mounted.exitCode}` }
}

/** Fills the disk under `folder` with one file until the kernel says there is no room left; the file's path. */
export function fillDisk(folder: string): string {
  const path = join(folder, 'filler')
  const file = openSync(path, 'w')
  // Big pieces first, then ever smaller ones: the last bytes the disk had are taken too.
  for (const size of [1 << 20, 1 << 16, 1 << 12, 1 << 9, 1])
    try {
      for (;;) writeSync(file, Buffer.alloc(size))
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOSPC') throw error
    }
  closeSync(file)
  return path
}
