/**
 * The node-opcua client of one connection, configured deliberately: the
 * defaults take up to 40 s to notice a dead peer (node-opcua issue 1194) and
 * would write a PKI into the home directory. Also the mapping of node-opcua's
 * connection errors to LK_* codes, and a teardown that cannot hang.
 */
import type { OPCUACertificateManager } from 'node-opcua-certificate-manager';
import { MessageSecurityMode, SecurityPolicy, type ClientSession, type OPCUAClient, type OPCUAClientOptions } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { OpcUaConnectionConfig } from '../../src/config/schema.js';
import { pkiFolder } from './pki.js';

/** Client options from the connection's configuration: security, keep-alive, timeouts, reconnection backoff. */
export function clientOptions(cfg: OpcUaConnectionConfig, backoff: { initialMs: number; maxMs: number }, cm: OPCUACertificateManager): OPCUAClientOptions {
  const { mode, policy } = cfg.security;
  const keepalive = cfg.keepalive_ms;
  return {
    applicationName: 'linekeeper',
    clientName: `linekeeper-${cfg.id}`,
    endpointMustExist: false,
    securityMode: MessageSecurityMode[mode],
    securityPolicy: policy === 'Basic256Sha256' ? SecurityPolicy.Basic256Sha256 : SecurityPolicy.None,
    // Our PKI (<dataDir>/pki), never auto-accepting; the client's own certificate is created there.
    clientCertificateManager: cm,
    // maxRetry ≥ 1 keeps node-opcua's automatic reconnection on (it retries forever within these
    // bounds); the retries of the initial connection are the connector's own.
    connectionStrategy: { initialDelay: backoff.initialMs, maxDelay: backoff.maxMs, maxRetry: 1, randomisationFactor: 0 },
    // A Read of ServerStatus every keepalive_ms: a dead server is noticed within about one period plus the request timeout.
    keepSessionAlive: true,
    keepAliveInterval: keepalive,
    // Long enough for the server to keep our session (and its subscriptions) across a short outage.
    requestedSessionTimeout: Math.max(10 * keepalive, 10_000),
    defaultTransactionTimeout: cfg.request_timeout_ms,
    // A socket silent for three keep-alive periods is dead (the default waits 60 s).
    transportTimeout: Math.max(3 * keepalive, cfg.request_timeout_ms + keepalive),
    // Chunks of 64 KiB each way. node-opcua allocates a whole send chunk for every request, and its default (640 KiB,
    // which a node-opcua server clamps to 512 KiB) made each guarded write (a Read, the Write, the Read-back) allocate
    // 1.5 MB outside the heap: V8 then collected garbage under external-memory pressure, a full mark-compact every ~30
    // writes. Larger messages go in several chunks; servers announcing less (a PLC's 8 KiB) lower it in the handshake.
    transportSettings: { sendBufferSize: 64 * 1024, receiveBufferSize: 64 * 1024 },
  };
}

/** node-opcua's errors → LK_CERT_UNTRUSTED / LK_CONN_TIMEOUT / LK_CONN_UNAVAILABLE (LkErrors pass through). */
export function classifyError(err: unknown, id: string, url: string, dataDir: string): LkError {
  if (LkError.is(err)) return err as LkError;
  const msg = err instanceof Error ? err.message : String(err);
  if (/BadCertificateUntrusted|certificate verification failed/i.test(msg)) {
    return new LkError(
      'LK_CERT_UNTRUSTED',
      `${id}: the server certificate of ${url} is not trusted; it is in ${pkiFolder(dataDir)}/rejected — check it with \`linekeeper certs list\` and trust it with \`linekeeper certs trust <thumbprint>\``,
      { url, pki: pkiFolder(dataDir) },
      { cause: err },
    );
  }
  if (/timeout|timed out/i.test(msg)) return new LkError('LK_CONN_TIMEOUT', `${id}: ${msg.split('\n')[0]}`, undefined, { cause: err });
  return new LkError('LK_CONN_UNAVAILABLE', `${id}: ${msg.split('\n')[0]}`, undefined, { cause: err });
}

/** Resolve with `p`, or with undefined after `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<undefined>((resolve) => (t = setTimeout(() => resolve(undefined), ms)))]).finally(() => clearTimeout(t));
}

/** Close session and client, each bounded by `ms`: a dead server must not hold close() up. */
export async function disposeClient(client: OPCUAClient | undefined, session: ClientSession | undefined, ms: number): Promise<void> {
  if (session) await withTimeout(session.close(true).catch(() => undefined), ms);
  if (client) await withTimeout(client.disconnect().catch(() => undefined), ms);
}
