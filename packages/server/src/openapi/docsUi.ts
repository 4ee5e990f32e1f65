/// <reference path="../assets.d.ts" />
// Carries the asset imports' types to a project that installed this package, whose tsconfig includes none of ours.
import { Elysia } from 'elysia'
import swaggerCss from 'swagger-ui-dist/swagger-ui.css' with { type: 'file' }
import swaggerJs from 'swagger-ui-dist/swagger-ui-bundle.js' with { type: 'file' }

const ASSETS: Record<string, { path: string; type: string }> = {
  'swagger-ui-bundle.js': { path: swaggerJs, type: 'text/javascript; charset=utf-8' },
  'swagger-ui.css': { path: swaggerCss, type: 'text/css; charset=utf-8' },
}

/** The reference page: Swagger UI from our own assets (no CDN), reading the document of the same prefix. */
function page(prefix: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentmarket API reference</title>
<meta name="description" content="Interactive reference of the agentmarket HTTP API">
<link rel="stylesheet" href="${prefix}/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${prefix}/docs/assets/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({ url: '${prefix}/openapi.json', dom_id: '#swagger-ui', deepLinking: true })</script>
</body>
</html>
`
}

/** GET {prefix}/docs and its assets. */
export function docsUi(prefix: string) {
  const html = page(prefix)
  return new Elysia({ seed: `docs${prefix}` })
    .get(
      `${prefix}/docs`,
      () => new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } }),
      {
        detail: { hide: true },
      },
    )
    .get(
      `${prefix}/docs/assets/:file`,
      ({ params }) => {
        const asset = ASSETS[params.file]
        if (!asset) return new Response('not found', { status: 404 })
        return new Response(Bun.file(asset.path), {
          headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=86400' },
        })
      },
      { detail: { hide: true } },
    )
}
