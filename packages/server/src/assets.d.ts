// Files imported `with { type: 'file' }` resolve to a path Bun.file can open, also inside the compiled binary.
declare module '*.css' {
  const path: string
  export default path
}
declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const path: string
  export default path
}
