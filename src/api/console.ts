/**
 * The review console at `/console`: one HTML shell, the console's own ES modules (`console/` of the package)
 * and an allow-list of vendor files from node_modules (Preact, its hooks, htm, uPlot). No build step and no
 * CDN: every byte comes from the package, read once at start and served from memory, so the console works
 * air-gapped and its first load is a handful of small responses on loopback.
 *
 * Every response carries a strict Content-Security-Policy: scripts only from this origin (`script-src 'self'`,
 * no inline script, no eval), no inline style elements, connections only back to the API. Preact's hooks import
 * the bare specifier `preact`; without a build step and without an inline import map (which the policy would
 * refuse) the one import is rewritten to the served path when the file is loaded.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import type { FastifyReply } from 'fastify';
import { installationPath } from '../config/installation.js';
import { LkError } from '../errors.js';
import type { Api } from './context.js';

/** The Content-Security-Policy of every console response. */
export const CONSOLE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data: blob:", "connect-src 'self'",
  "font-src 'self'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** The `console/` folder of this installation (beside `src/` in a checkout, beside `dist/` when built). */
export function consoleDir(): string {
  const d = installationPath('console', (path) => existsSync(join(path, 'app.js')));
  if (d === undefined) throw new LkError('LK_INTERNAL', 'the console files (console/app.js) are missing from this installation');
  return d;
}

function asset(body: Buffer | string, type: string): Asset {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return { body: b, type, etag: `"${createHash('sha256').update(b).digest('base64url').slice(0, 22)}"` };
}

/** Vendor files by served name: the package file, and its bare imports rewritten to served paths. */
function vendor(): Map<string, Asset> {
  const req = createRequire(import.meta.url);
  // not `<name>/package.json`: htm's exports map does not list it; walk up from its entry point instead
  const pkgDir = (name: string): string => {
    for (let d = dirname(req.resolve(name)); d !== dirname(d); d = dirname(d)) {
      const f = join(d, 'package.json');
      if (existsSync(f) && (JSON.parse(readFileSync(f, 'utf8')) as { name?: string }).name === name) return d;
    }
    throw new LkError('LK_INTERNAL', `the console's vendor package ${name} is not installed`);
  };
  const file = (name: string, rel: string): string => readFileSync(join(pkgDir(name), rel), 'utf8');
  const js = TYPES['.js']!;
  return new Map([
    ['preact.js', asset(file('preact', 'dist/preact.module.js'), js)],
    ['hooks.js', asset(file('preact', 'hooks/dist/hooks.module.js').replace(/from\s*["']preact["']/g, 'from"./preact.js"'), js)],
    ['htm.js', asset(file('htm', 'dist/htm.module.js'), js)],
    ['uplot.js', asset(file('uplot', 'dist/uPlot.esm.js'), js)],
    ['uplot.css', asset(file('uplot', 'dist/uPlot.min.css'), TYPES['.css']!)],
  ]);
}

/** The HTML shell: no inline script or style; the app module renders into <main>. */
function shell(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>linekeeper review console</title>
<link rel="stylesheet" href="/console/app/console.css">
<link rel="stylesheet" href="/console/vendor/uplot.css">
<link rel="modulepreload" href="/console/vendor/preact.js">
<link rel="modulepreload" href="/console/vendor/hooks.js">
<link rel="modulepreload" href="/console/vendor/htm.js">
<script type="module" src="/console/app/app.js"></script>
</head>
<body>
<div id="root"><p class="boot">Loading the review console…</p></div>
<noscript>The review console needs JavaScript (served by this linekeeper node; nothing is loaded from elsewhere).</noscript>
</body>
</html>
`;
}

function send(reply: FastifyReply, a: Asset, ifNoneMatch: string | undefined): FastifyReply {
  reply.header('content-security-policy', CONSOLE_CSP).header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache').header('etag', a.etag);
  if (ifNoneMatch === a.etag) return reply.code(304).send();
  return reply.type(a.type).send(a.body);
}

/**
 * Serve the console under `/console` (hidden from the OpenAPI document: it is not part of the API contract).
 * @throws LkError LK_INTERNAL when the console files are missing from the installation.
 */
export function registerConsole(app: Api, dir: string = consoleDir()): void {
  const own = new Map<string, Asset>();
  for (const f of readdirSync(dir)) {
    const type = TYPES[extname(f)];
    if (type) own.set(f, asset(readFileSync(join(dir, f)), type));
  }
  const vend = vendor();
  const page = asset(shell(), 'text/html; charset=utf-8');
  const hidden = { schema: { hide: true } };
  const notFound = (what: string): never => {
    throw new LkError('LK_NOT_FOUND', `no console file ${what}`);
  };

  app.get('/console', hidden, async (req, reply) => send(reply, page, req.headers['if-none-match']));
  app.get('/console/', hidden, async (_req, reply) => reply.redirect('/console', 301));
  app.get('/console/app/:file', hidden, async (req, reply) => {
    const name = (req.params as { file: string }).file;
    return send(reply, own.get(name) ?? notFound(name), req.headers['if-none-match']);
  });
  app.get('/console/vendor/:file', hidden, async (req, reply) => {
    const name = (req.params as { file: string }).file;
    return send(reply, vend.get(name) ?? notFound(name), req.headers['if-none-match']);
  });
}
