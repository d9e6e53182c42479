/**
 * `linekeeper discover opcua`: one short session to a server, with the client
 * options, PKI and error mapping of a configured connection (link.ts,
 * pki.ts): an unknown server certificate is refused (LK_CERT_UNTRUSTED, it
 * lands in `<data>/pki/rejected` for `linekeeper certs trust`), nothing is
 * retried, and the session is closed whatever happens.
 */
import { OPCUAClient, type ClientSession, type NodeId } from 'node-opcua-client';
import { LkError } from '../../src/errors.js';
import type { OpcUaConnectionConfig } from '../../src/config/schema.js';
import { browseVariables, type BrowseLimits, type BrowseResult } from './browse.js';
import { mapDiscovery, type MappedDiscovery } from './discover-map.js';
import { classifyError, clientOptions, disposeClient } from './link.js';
import { acquireClientPki } from './pki.js';
import { resolveNodeId } from './tags.js';

export interface DiscoverOpcUaOptions {
  /** opc.tcp:// URL of the server. */
  readonly url: string;
  /** Data directory whose PKI (`<data>/pki`) the client uses, as the daemon does. */
  readonly dataDir: string;
  readonly security: OpcUaConnectionConfig['security'];
  readonly requestTimeoutMs: number;
  /** Start node: absolute (`ns=3;s=Press`, `nsu=<uri>;s=Press`, `i=85`) or relative to `namespaceUri`; default the Objects folder. */
  readonly under?: string;
  /** The connection's namespace_uri: relative node ids in the output are in it; default the namespace most variables are in. */
  readonly namespaceUri?: string;
  readonly limits: BrowseLimits;
}

export interface OpcUaDiscovery {
  readonly result: BrowseResult;
  readonly mapped: MappedDiscovery;
}

/**
 * Browse the server and map what it has to configuration tags.
 * @throws LkError LK_CONN_UNAVAILABLE / LK_CONN_TIMEOUT (no server, refused), LK_CERT_UNTRUSTED,
 *   LK_VALIDATION (a start node that cannot be read as a node id, a namespace the server does not have),
 *   LK_NOT_FOUND (a start node the server does not have).
 */
export async function discoverOpcUa(o: DiscoverOpcUaOptions): Promise<OpcUaDiscovery> {
  const { mode, policy } = o.security;
  if ((mode === 'None') !== (policy === 'None')) {
    throw new LkError('LK_VALIDATION', `security mode ${mode} needs ${mode === 'None' ? 'policy None' : 'policy Basic256Sha256'}, got ${policy}`);
  }
  const cfg: OpcUaConnectionConfig = {
    id: 'discover',
    protocol: 'opcua',
    endpoint: o.url,
    namespace_uri: o.namespaceUri ?? 'urn:discover',
    security: o.security,
    max_data_age_ms: o.requestTimeoutMs,
    request_timeout_ms: o.requestTimeoutMs,
    keepalive_ms: o.requestTimeoutMs,
  };
  const pki = await acquireClientPki(o.dataDir);
  let client: OPCUAClient | undefined;
  let session: ClientSession | undefined;
  try {
    await pki.cm.reloadCertificates();
    // one attempt: a person is waiting, and an unreachable endpoint is an answer
    client = OPCUAClient.create({ ...clientOptions(cfg, { initialMs: 100, maxMs: 100 }, pki.cm), connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 100 }, keepSessionAlive: false });
    try {
      await client.connect(o.url);
      session = await client.createSession();
    } catch (err) {
      throw classifyError(err, o.url, o.url, o.dataDir);
    }
    const namespaces = (await session.readNamespaceArray()).map(String);
    if (o.namespaceUri !== undefined && !namespaces.includes(o.namespaceUri)) {
      throw new LkError('LK_VALIDATION', `namespace ${o.namespaceUri} is not on the server (it has ${namespaces.slice(1).join(', ') || 'only namespace 0'})`, { namespaces });
    }
    const start = startNode(o.under, o.namespaceUri, namespaces);
    const result = await browseVariables(session, start, o.limits);
    return { result, mapped: mapDiscovery(result, o.namespaceUri) };
  } catch (err) {
    throw LkError.is(err) ? err : classifyError(err, o.url, o.url, o.dataDir);
  } finally {
    await disposeClient(client, session, o.requestTimeoutMs);
    await pki.release();
  }
}

function startNode(under: string | undefined, uri: string | undefined, namespaces: readonly string[]): NodeId {
  if (under === undefined) return resolveNodeId('i=85', 0, namespaces);
  const absolute = /^(ns|nsu)=/.test(under) || /^i=\d+$/.test(under);
  if (!absolute && uri === undefined) throw new LkError('LK_VALIDATION', `--under ${under}: a node id without ns= or nsu= needs --namespace-uri (or --connection) to say its namespace`);
  try {
    return resolveNodeId(under, absolute ? 0 : namespaces.indexOf(uri!), namespaces);
  } catch (err) {
    if (LkError.is(err)) throw new LkError('LK_VALIDATION', `--under ${under}: the server has no namespace ${under.slice(4, under.indexOf(';'))}`, undefined, { cause: err });
    throw new LkError('LK_VALIDATION', `--under ${under}: not a node id (e.g. ns=2;s=Press, nsu=urn:vendor;i=1001, i=85)`, undefined, { cause: err });
  }
}
