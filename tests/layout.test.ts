import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

// The map a newcomer reads first must name every part: each package, each top-level folder of a package's src, each
// port of core, with a changelog at the package's version. A folder or port added without its line fails here.

const ROOT = join(import.meta.dir, '..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const folders = (path: string) =>
  readdirSync(join(ROOT, path), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)

/** The packages (packages/*) and the top-level folders of each one's src. */
const PACKAGES = folders('packages').map((name) => ({ name, src: folders(`packages/${name}/src`) }))

/** README's Layout block as entries: the path a line starts with, and the words under it (its indented lines). */
function layoutEntries(readme: string): Map<string, string> {
  const section = readme.slice(readme.indexOf('## Layout'))
  const block = section.slice(section.indexOf('```') + 3, section.indexOf('```', section.indexOf('```') + 3))
  const entries = new Map<string, string>()
  let current = ''
  for (const line of block.split('\n').slice(1)) {
    if (/^\S/.test(line)) {
      current = line.split(/\s+/)[0] ?? ''
      entries.set(current, line.slice(current.length))
    } else entries.set(current, `${entries.get(current) ?? ''} ${line.trim()}`)
  }
  return entries
}

/** Whether `text` names the folder `folder` as a folder: `a2a/`, not the word a2a or the file a2a.ts. */
const namesFolder = (text: string, folder: string) =>
  new RegExp(`(^|[\\s\`(/])${folder.replace('.', '\\.')}/`).test(text)

describe('the map of the repository', () => {
  test("behavior: README's Layout names every package and every top-level folder of its src", () => {
    const entries = layoutEntries(read('README.md'))
    expect(entries.size).toBeGreaterThan(5)
    const missing: string[] = []
    for (const { name, src } of PACKAGES) {
      const own = [...entries].filter(
        ([path]) => path === `packages/${name}` || path.startsWith(`packages/${name}/`),
      )
      if (own.length === 0) missing.push(`packages/${name}`)
      for (const folder of src) {
        const under = `packages/${name}/src/${folder}`
        const named = own.some(
          ([path, words]) =>
            path === under || (path === `packages/${name}/src` && namesFolder(words, folder)),
        )
        if (!named) missing.push(`${under}/`)
      }
    }
    expect(missing, 'README.md ## Layout does not name these').toEqual([])
  })

  test('behavior: docs/architecture.md names every package, every folder of its src and every port', () => {
    const architecture = read('docs/architecture.md')
    const missing: string[] = []
    for (const { name, src } of PACKAGES) {
      if (!architecture.includes(`@agentmarket/${name}`)) missing.push(`@agentmarket/${name}`)
      for (const folder of src)
        if (!namesFolder(architecture, folder)) missing.push(`packages/${name}/src/${folder}/`)
    }
    for (const port of readdirSync(join(ROOT, 'packages/core/src/ports')))
      if (!port.endsWith('.test.ts') && !architecture.includes(`${port}\``)) missing.push(`ports/${port}`)
    // Each slice of the Store port: the types whose intersection `Store` is.
    const store = read('packages/core/src/ports/Store.ts')
    const slices = /export type Store =([^\n]+(?:\n {2}[^\n]+)*)/.exec(store)?.[1]?.match(/\w+/g) ?? []
    expect(slices.length).toBeGreaterThan(3)
    for (const slice of slices)
      if (!architecture.includes(`\`${slice}\``)) missing.push(`Store slice ${slice}`)
    expect(missing, 'docs/architecture.md does not name these').toEqual([])
  })

  test('behavior: CONTRIBUTING.md counts the packages and names each', () => {
    const contributing = read('CONTRIBUTING.md')
    const words = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight']
    const count = `${words[PACKAGES.length]} packages`
    expect(contributing.includes(count), `CONTRIBUTING.md should say "${count}"`).toBe(true)
    for (const { name } of PACKAGES)
      expect(contributing.includes(name), `CONTRIBUTING.md does not name ${name}`).toBe(true)
  })

  test('behavior: every package keeps a CHANGELOG.md whose latest entry is its version', () => {
    for (const { name } of PACKAGES) {
      const { version } = JSON.parse(read(`packages/${name}/package.json`)) as { version: string }
      const changelog = `packages/${name}/CHANGELOG.md`
      expect(existsSync(join(ROOT, changelog)), `${changelog} is missing`).toBe(true)
      expect(/^## (\S+)$/m.exec(read(changelog))?.[1], changelog).toBe(version)
    }
  })
})
