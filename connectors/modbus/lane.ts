/**
 * One Modbus TCP "lane": a socket to the endpoint dedicated to ONE unit id,
 * with its own FIFO queue and exactly one request in flight.
 *
 * Why a socket per unit, and why drop it on every timeout:
 * - modbus-serial 8.0 (ports/tcpport.js) numbers requests with an 8-bit
 *   transaction id (1..255, then wraps) and keeps every transaction in a map it
 *   never prunes; a reply is matched only by that id (plus unit and function
 *   code). A timed-out transaction is flagged and its late reply ignored — but
 *   only until the id wraps, and only if the server echoes ids faithfully
 *   (gateways that answer with a stale or zero id exist). So the library alone
 *   cannot guarantee that a late reply is never taken for a later answer.
 * - We therefore never reuse a socket after a timeout: the client is destroyed
 *   and a fresh one opened, so a late reply arrives on a dead socket and cannot
 *   shift any later reply, whatever transaction id it carries. With one request
 *   in flight there is no other reply it could be confused with either.
 * - Dropping the socket would abort the in-flight requests of every other unit
 *   sharing it, and one in flight per socket would make a muted unit stall the
 *   others for a full timeout per request. One socket per unit keeps a muted
 *   unit's timeouts and reconnects to itself; the cost is one TCP connection
 *   per unit at the gateway (gateways usually allow 4–16).
 *
 * Timeouts are enforced twice: `client.setTimeout()` (the library has none by
 * default) and our own timer, which also covers a socket that dies silently.
 */
import m from 'modbus-serial';
import { LkError, type ErrorCode } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import { exceptionCode, type Table } from './plan.js';

const ModbusRTU = m.default;
type Client = InstanceType<typeof ModbusRTU>;

export type LaneState = 'idle' | 'connecting' | 'open' | 'down' | 'closed';
export type UnitHealth = 'ok' | 'timeout' | 'error';

export interface Backoff {
  /** First reconnect delay after the connection was lost or refused, ms. */
  readonly initialMs: number;
  /** Upper bound of the doubling delay, ms. */
  readonly maxMs: number;
  /**
   * How long a connection must have stayed open before its loss starts the backoff afresh (default 30 s).
   * A peer that accepts and closes at once (a gateway at its connection limit) must not reset it, or the
   * lane reconnects at the initial delay forever and every connect/loss is an audited event.
   */
  readonly healthyMs?: number;
}

/** Default of {@link Backoff.healthyMs}. */
export const HEALTHY_CONNECTION_MS = 30_000;

/**
 * The delay before the next attempt and the attempt count after it. `openedFor` is how long the connection
 * that just ended was open (undefined when the attempt failed to connect): only a connection that was
 * healthy for `healthyMs` starts the doubling again.
 */
export function nextBackoff(b: Backoff, attempt: number, openedFor: number | undefined): { delayMs: number; attempt: number } {
  const a = openedFor !== undefined && openedFor >= (b.healthyMs ?? HEALTHY_CONNECTION_MS) ? 0 : attempt;
  return { delayMs: Math.min(b.maxMs, b.initialMs * 2 ** Math.min(a, 30)), attempt: a + 1 };
}

export interface LaneOptions {
  readonly host: string;
  readonly port: number;
  readonly unitId: number;
  readonly timeoutMs: number;
  readonly backoff: Backoff;
  readonly logger: Logger;
  /** Called whenever state or health changes (the connector aggregates). */
  readonly onChange: () => void;
  /** Wall clock (epoch ms) for how long a connection stayed open; default Date.now. */
  readonly now?: () => number;
}

interface Job {
  readonly run: (c: Client) => Promise<unknown>;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: unknown) => void;
}

export class UnitLane {
  state: LaneState = 'idle';
  health: UnitHealth = 'error';
  lastError: string | undefined = 'not connected';
  /** Successful re-opens after the first one. */
  reconnects = 0;
  /** Requests that hit the timeout (each one dropped the socket). */
  timeouts = 0;
  /**
   * The endpoint accepted our last connection attempt and has not closed it.
   * Stays true across the deliberate re-open after a timeout, so a silent unit
   * does not make the whole connection look lost; the connector calls the
   * connection lost only when no unit is both reachable and answering.
   */
  reachable = false;
  private everOpened = false;
  private client: Client | undefined;
  private readonly queue: Job[] = [];
  private busy = false;
  private connecting: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  /** When the current connection opened (cleared when it ends): how long it was healthy decides the backoff. */
  private openedAt: number | undefined;
  private abortInFlight: ((e: LkError) => void) | undefined;
  private readonly openWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(private readonly o: LaneOptions) {}

  private now(): number {
    return this.o.now ? this.o.now() : Date.now();
  }

  get unitId(): number {
    return this.o.unitId;
  }

  /** Start connecting (and keep reconnecting with backoff until close()). */
  start(): void {
    if (this.state === 'idle') this.connectNow();
  }

  /** Resolves on the first successful open; rejects if the lane is closed before. */
  whenOpen(): Promise<void> {
    if (this.everOpened) return Promise.resolve();
    if (this.state === 'closed') return Promise.reject(new LkError('LK_CONN_UNAVAILABLE', 'connector closed'));
    return new Promise((resolve, reject) => this.openWaiters.push({ resolve, reject }));
  }

  /**
   * FC3/FC4 read of `count` registers.
   * @throws LkError LK_CONN_TIMEOUT, LK_CONN_UNAVAILABLE, LK_MODBUS_* (exception reply), LK_MODBUS_PROTOCOL.
   */
  readRegisters(table: Table, start: number, count: number): Promise<number[]> {
    return this.enqueue(async (c) => {
      const r = table === 'holding' ? await c.readHoldingRegisters(start, count) : await c.readInputRegisters(start, count);
      if (!Array.isArray(r.data) || r.data.length !== count) throw new LkError('LK_MODBUS_PROTOCOL', `expected ${count} registers`);
      return r.data;
    }) as Promise<number[]>;
  }

  /**
   * FC16 write multiple registers.
   * @throws LkError as {@link readRegisters}.
   */
  async writeRegisters(start: number, values: readonly number[]): Promise<void> {
    await this.enqueue((c) => c.writeRegisters(start, [...values]));
  }

  /** Stop reconnecting, fail everything queued or in flight, destroy the socket. */
  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.retryTimer);
    const err = new LkError('LK_CONN_UNAVAILABLE', 'connector closed');
    this.abortInFlight?.(err);
    for (const j of this.queue.splice(0)) j.reject(err);
    for (const w of this.openWaiters.splice(0)) w.reject(err);
    this.dropClient();
    this.o.onChange();
  }

  private enqueue(run: (c: Client) => Promise<unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let job = this.queue.shift(); job; job = this.queue.shift()) {
        try {
          job.resolve(await this.execute(job));
        } catch (e) {
          job.reject(e);
        }
      }
    } finally {
      this.busy = false;
    }
  }

  private async execute(job: Job): Promise<unknown> {
    if (this.state === 'idle') this.connectNow();
    if (this.state === 'connecting') await this.connecting;
    const client = this.client;
    if (this.state !== 'open' || !client) {
      throw new LkError('LK_CONN_UNAVAILABLE', `unit ${this.o.unitId}: ${this.lastError ?? 'not connected'}`);
    }
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err: LkError | undefined, value?: unknown): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.abortInFlight = undefined;
        if (err) reject(err);
        else resolve(value);
      };
      const timer = setTimeout(() => {
        finish(new LkError('LK_CONN_TIMEOUT', `unit ${this.o.unitId} did not answer within ${this.o.timeoutMs} ms`, { outcome: 'unknown' }));
        this.onTimeout(client);
      }, this.o.timeoutMs);
      this.abortInFlight = (e) => finish(e);
      job.run(client).then(
        (v) => {
          if (done) return;
          this.setHealth('ok', undefined);
          finish(undefined, v);
        },
        (e: unknown) => {
          if (done) return;
          const lk = this.classify(e);
          finish(lk);
          if (lk.code === 'LK_CONN_TIMEOUT') this.onTimeout(client);
          // A malformed reply means the stream may be out of step; "port not open" means the
          // socket died under us. Either way only a fresh socket is trustworthy.
          else if (lk.code === 'LK_MODBUS_PROTOCOL' || lk.code === 'LK_CONN_UNAVAILABLE') this.restart(client, lk.message);
        },
      );
    });
  }

  /** Map what modbus-serial rejects with to an LkError, and note the unit's health. */
  private classify(e: unknown): LkError {
    if (LkError.is(e)) return e as LkError;
    const err = e as { modbusCode?: unknown; errno?: unknown; message?: unknown };
    if (typeof err.modbusCode === 'number') {
      const code: ErrorCode = exceptionCode(err.modbusCode);
      // Exceptions 1–3 are answers about the request: the unit itself is fine.
      this.setHealth(err.modbusCode <= 3 ? 'ok' : 'error', `exception ${err.modbusCode}`);
      return new LkError(code, `unit ${this.o.unitId}: Modbus exception ${err.modbusCode}`, { modbusCode: err.modbusCode, unitId: this.o.unitId });
    }
    if (err.errno === 'ETIMEDOUT') return new LkError('LK_CONN_TIMEOUT', `unit ${this.o.unitId} did not answer within ${this.o.timeoutMs} ms`);
    if (err.errno === 'ECONNREFUSED') return new LkError('LK_CONN_UNAVAILABLE', `unit ${this.o.unitId}: port not open`);
    return new LkError('LK_MODBUS_PROTOCOL', `unit ${this.o.unitId}: ${String(err.message ?? e)}`);
  }

  private onTimeout(client: Client): void {
    if (client !== this.client) return;
    this.timeouts++;
    this.setHealth('timeout', 'timeout');
    // Whatever waits behind a request the unit just ignored would most likely
    // time out too, one full timeout each; fail it now so the next poll cycle
    // starts afresh on a new socket. Nothing of it has been sent.
    const err = new LkError('LK_CONN_TIMEOUT', `unit ${this.o.unitId} is not answering (request not sent)`, { sent: false });
    for (const j of this.queue.splice(0)) j.reject(err);
    this.restart(client, 'timeout');
  }

  /** Drop the socket (so a late or out-of-step reply can never be read) and re-open it at once. */
  private restart(client: Client, why: string): void {
    if (client !== this.client || this.state === 'closed') return;
    this.o.logger.debug({ unitId: this.o.unitId, why }, 'modbus: dropping socket');
    this.dropClient();
    this.connectNow();
  }

  private dropClient(): void {
    const c = this.client;
    this.client = undefined;
    if (c) {
      try {
        c.destroy(() => undefined);
      } catch {
        /* already gone */
      }
    }
  }

  private setHealth(h: UnitHealth, err: string | undefined): void {
    const changed = h !== this.health;
    this.health = h;
    if (err !== undefined) this.lastError = err;
    if (changed) this.o.onChange();
  }

  private setState(s: LaneState): void {
    if (this.state === 'closed' || s === this.state) return;
    this.state = s;
    this.o.onChange();
  }

  private connectNow(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.setState('connecting');
    this.connecting = this.openClient().then(
      (client) => {
        if (this.state === 'closed') {
          client.destroy(() => undefined);
          return;
        }
        this.client = client;
        // the attempt count is not reset here: see nextBackoff
        this.openedAt = this.now();
        this.reachable = true;
        if (this.everOpened) this.reconnects++;
        this.everOpened = true;
        if (this.health === 'error') this.setHealth('ok', undefined);
        this.setState('open');
        for (const w of this.openWaiters.splice(0)) w.resolve();
      },
      (e: unknown) => {
        if (this.state === 'closed') return;
        this.reachable = false;
        this.setHealth('error', `connect failed: ${e instanceof Error ? e.message : String(e)}`);
        this.scheduleReconnect();
      },
    );
  }

  private scheduleReconnect(): void {
    if (this.state === 'closed') return;
    const openedFor = this.openedAt === undefined ? undefined : this.now() - this.openedAt;
    this.openedAt = undefined;
    const { delayMs: delay, attempt } = nextBackoff(this.o.backoff, this.attempt, openedFor);
    this.attempt = attempt;
    this.setState('down');
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.connectNow(), delay);
  }

  /** Open a fresh client, bounded by the request timeout (connectTCP has no timeout of its own). */
  private openClient(): Promise<Client> {
    const client = new ModbusRTU();
    // modbus-serial re-emits socket errors as 'error' events; unhandled they would crash the process.
    client.on('error', (e: unknown) => this.o.logger.debug({ unitId: this.o.unitId, err: String(e) }, 'modbus: socket error'));
    return new Promise<Client>((resolve, reject) => {
      const timer = setTimeout(() => {
        client.destroy(() => undefined);
        reject(new Error(`connect timed out after ${this.o.timeoutMs} ms`));
      }, Math.max(this.o.timeoutMs, 250));
      client.connectTCP(this.o.host, { port: this.o.port }).then(
        () => {
          clearTimeout(timer);
          client.setID(this.o.unitId);
          client.setTimeout(this.o.timeoutMs);
          client.on('close', () => this.onSocketClosed(client));
          resolve(client);
        },
        (e: unknown) => {
          clearTimeout(timer);
          client.destroy(() => undefined);
          reject(e instanceof Error ? e : new Error(String((e as { message?: unknown })?.message ?? e)));
        },
      );
    });
  }

  /** The peer closed the socket (server gone): fail the request in flight now, then reconnect with backoff. */
  private onSocketClosed(client: Client): void {
    if (client !== this.client || this.state === 'closed') return;
    this.client = undefined;
    this.reachable = false;
    this.setHealth('error', 'connection closed by peer');
    // a request in flight may have been applied before the peer closed: its outcome is unknown
    this.abortInFlight?.(new LkError('LK_CONN_UNAVAILABLE', `unit ${this.o.unitId}: connection closed by peer`, { outcome: 'unknown' }));
    this.scheduleReconnect();
  }
}
