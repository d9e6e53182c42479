/**
 * A TCP proxy between a client under test and a real server, for network
 * faults the servers themselves cannot fake:
 *
 * - `drop()`   resets every open connection pair now (RST both ways: an abrupt loss, not a clean close);
 * - `pause()`  a network black hole: sockets stay open, no byte moves in either direction, and a peer's
 *              close is not passed on either (as on a dead link) until `resume()` — then queued bytes, FINs
 *              and closes go through, as TCP would deliver them once the link is back;
 * - `refuse(true)` new connections are reset as soon as they are accepted (upstream is never contacted);
 * - `close()`  all of it ends and the port is released.
 *
 * Bytes are forwarded both ways with backpressure: a side that cannot take
 * more pauses the reading of the other side until it drains. While paused
 * (the black hole) the proxy reads nothing, so what the client keeps sending
 * piles up in the kernel's buffers, as it would in front of a dead link.
 *
 *   const proxy = await startTcpProxy({ target: { host: sim.modbusHost, port: sim.modbusPort } });
 *   createModbusConnector({ ..., host: '127.0.0.1', port: proxy.port });
 *   createOpcUaConnector({ ..., url: proxy.via(sim.opcuaUrl) });
 */
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpProxyOptions {
  readonly target: { readonly host: string; readonly port: number };
}

export interface TcpProxyStats {
  /** Connection pairs open now. */
  readonly open: number;
  /** Connections accepted and forwarded since the start. */
  readonly accepted: number;
  /** Connections reset at once because of `refuse(true)`. */
  readonly refused: number;
}

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** The proxy as `host:port` (the endpoint form of a Modbus connection); host defaults to 127.0.0.1. */
  url(host?: string): string;
  /** `url` (e.g. `opc.tcp://127.0.0.1:4840/linekeeper/sim`) with its host and port replaced by the proxy's. */
  via(url: string, host?: string): string;
  /** Reset every open connection pair now. */
  drop(): void;
  /** Stop forwarding bytes (and closes), keep the sockets open: a network black hole. New connections are held too. */
  pause(): void;
  /** Forward again, including what queued up and closes that happened meanwhile. */
  resume(): void;
  /** While on, new connections are reset as soon as they are accepted. */
  refuse(on: boolean): void;
  stats(): TcpProxyStats;
  /** Reset every pair and stop listening. */
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  /** A side closed while paused: the other one is closed on resume. */
  gone: boolean;
  /** Sides whose peer sent its FIN while paused: ended on resume. */
  readonly held: Socket[];
}

/** Reset (RST) a socket; a socket that has no TCP handle (yet) is destroyed. */
function reset(s: Socket): void {
  if (s.destroyed) return;
  try {
    s.resetAndDestroy();
  } catch {
    s.destroy();
  }
}

/**
 * Start the proxy on 127.0.0.1, a free port.
 *
 * @throws whatever `listen` fails with (no free port).
 */
export async function startTcpProxy(o: TcpProxyOptions): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let paused = false;
  let refusing = false;
  let accepted = 0;
  let refused = 0;

  const end = (p: Pair): void => {
    pairs.delete(p);
    reset(p.client);
    reset(p.upstream);
  };

  /** A side closed or failed: close the pair now, or on resume when the link is "down". */
  const gone = (p: Pair): void => {
    if (!pairs.has(p)) return;
    if (paused) p.gone = true;
    else end(p);
  };

  const forward = (from: Socket, to: Socket, p: Pair): void => {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!paused && pairs.has(p)) from.resume();
    });
    // a half close passes through as a half close (Modbus and OPC UA peers may send their FIN first);
    // a paused socket still reads its FIN when no data is waiting, so the black hole must hold it back
    from.on('end', () => {
      if (paused) p.held.push(to);
      else to.end();
    });
  };

  const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (client) => {
    client.on('error', () => undefined);
    if (refusing) {
      refused++;
      reset(client);
      return;
    }
    accepted++;
    const upstream = createConnection({ host: o.target.host, port: o.target.port, allowHalfOpen: true });
    upstream.on('error', () => undefined);
    const p: Pair = { client, upstream, gone: false, held: [] };
    pairs.add(p);
    client.on('close', () => gone(p));
    upstream.on('close', () => gone(p));
    upstream.once('connect', () => {
      if (!pairs.has(p)) return;
      forward(client, upstream, p);
      forward(upstream, client, p);
      if (paused) {
        client.pause();
        upstream.pause();
      } else {
        client.resume();
        upstream.resume();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: (host = '127.0.0.1') => `${host.includes(':') ? `[${host}]` : host}:${port}`,
    via(url, host = '127.0.0.1') {
      const u = new URL(url);
      u.hostname = host.includes(':') ? `[${host}]` : host;
      u.port = String(port);
      return u.toString();
    },
    drop() {
      for (const p of [...pairs]) end(p);
    },
    pause() {
      paused = true;
      for (const p of pairs) {
        p.client.pause();
        p.upstream.pause();
      }
    },
    resume() {
      paused = false;
      for (const p of [...pairs]) {
        if (p.gone) {
          end(p);
          continue;
        }
        for (const s of p.held.splice(0)) s.end();
        // a side still waiting for its peer to drain stays paused; 'drain' resumes it
        if (!p.upstream.writableNeedDrain) p.client.resume();
        if (!p.client.writableNeedDrain) p.upstream.resume();
      }
    },
    refuse(on) {
      refusing = on;
    },
    stats: () => ({ open: pairs.size, accepted, refused }),
    async close() {
      refusing = true;
      for (const p of [...pairs]) end(p);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
