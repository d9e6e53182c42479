/**
 * GET /metrics: the daemon's Prometheus metrics (src/ops/metrics.ts).
 *
 * Who may scrape: a peer on the loopback interface (a Prometheus or node agent on the edge node itself), or —
 * when `api.metrics_token_file` is configured — any peer presenting that token as `Authorization: Bearer …`.
 * Everyone else gets 403 problem+json. The metrics name connections, tags' equipment and run counts, not batch
 * data, but they still describe the plant: they are not public. The token is compared in constant time.
 */
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LkError } from '../errors.js';
import type { Metrics } from '../ops/metrics.js';
import type { Api } from './context.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** True when the socket peer is this host. */
export function isLoopback(address: string | undefined): boolean {
  return address !== undefined && LOOPBACK.test(address);
}

/**
 * Register GET /metrics.
 * @throws LkError LK_CONFIG_INVALID when the configured token file cannot be read or is empty.
 */
export function registerMetricsRoute(app: Api, metrics: Metrics, opts: { tokenFile?: string | undefined } = {}): void {
  let token: Buffer | undefined;
  if (opts.tokenFile !== undefined) {
    try {
      token = Buffer.from(readFileSync(opts.tokenFile, 'utf8').trim());
    } catch (err) {
      throw new LkError('LK_CONFIG_INVALID', `api.metrics_token_file: cannot read ${opts.tokenFile}`, { file: opts.tokenFile }, { cause: err });
    }
    if (token.length < 16) throw new LkError('LK_CONFIG_INVALID', `api.metrics_token_file: ${opts.tokenFile} holds no token of at least 16 characters`, { file: opts.tokenFile });
  }
  const allowed = (peer: string | undefined, auth: string | undefined): boolean => {
    if (isLoopback(peer)) return true;
    if (!token || !auth?.startsWith('Bearer ')) return false;
    const given = Buffer.from(auth.slice(7).trim());
    return given.length === token.length && timingSafeEqual(given, token);
  };
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (!allowed(req.socket.remoteAddress, req.headers.authorization)) {
      throw new LkError('LK_FORBIDDEN', 'metrics are served to loopback peers, or with the metrics token (api.metrics_token_file)');
    }
    reply.header('content-type', metrics.contentType);
    return reply.send(await metrics.text());
  });
}
