/**
 * The one narrow interface every equipment connector implements (OPC UA,
 * Modbus TCP). Everybody may read, subscribe and watch health; the write
 * capability is handed out exactly once, to the guarded writer
 * (src/engine), which is the single write path to equipment (rules R6/R7).
 *
 * Tag ids are `<equipment>.<TagName>` as in the site configuration.
 */

/** OPC UA-style quality, also used for Modbus (timeouts and exceptions are `bad`). */
export type Quality = 'good' | 'uncertain' | 'bad';

/**
 * A tag's value. Scalars as numbers, strings and booleans; a `DoubleArray`
 * tag (an NIR spectrum) as a frozen plain `readonly number[]` — not a
 * Float64Array, so it survives JSON, structuredClone and logging as an array;
 * a `ByteString` tag (a camera frame) as a `Uint8Array` copied out of the
 * protocol's receive buffer (never a Buffer that aliases it). Both arrive
 * only from tags configured with those types, and are never written.
 * Summaries and logs should print their length, not their elements.
 */
export type TagValue = number | string | boolean | readonly number[] | Uint8Array;

export interface Sample {
  readonly tag: string;
  /** null whenever quality is not good, or the value (or any element of an array) was NaN/Infinity/of the wrong type: never a made-up number. */
  readonly value: TagValue | null;
  readonly quality: Quality;
  /** Protocol status, e.g. `Good`, `BadNodeIdUnknown`, `UncertainLastUsableValue`, `LK_CONN_TIMEOUT`. */
  readonly status: string;
  /** Engineering unit (UCUM) of `value`. */
  readonly unit: string;
  /** Source timestamp from the equipment where available, else the time of the read (epoch ms). */
  readonly sourceTime: number;
  /** When linekeeper received it (epoch ms). */
  readonly receivedAt: number;
}

export interface TagDescription {
  readonly tag: string;
  readonly equipment: string;
  readonly name: string;
  readonly kind: 'setpoint' | 'measurement' | 'supervisor';
  readonly unit: string;
  /** OPC UA DataType name or Modbus codec type. */
  readonly dataType: string;
  readonly writable: boolean;
  /** Instrument range (EURange for OPC UA AnalogItems). */
  readonly range?: { readonly min: number; readonly max: number };
  /** Protocol address: OPC UA node id or `unit/table/address`. */
  readonly address: string;
}

export type ConnectorState = 'connecting' | 'connected' | 'lost' | 'closed';

export interface ConnectorHealth {
  readonly id: string;
  readonly protocol: 'opcua' | 'modbus';
  readonly state: ConnectorState;
  readonly endpoint: string;
  /** Epoch ms of the last good data received, if any. */
  readonly lastDataAt?: number;
  readonly reconnects: number;
  /** Subscriptions re-created by the data-age watchdog (OPC UA) or stalled poll groups (Modbus). */
  readonly staleRecoveries: number;
  readonly lastError?: string;
  /** Tags this connection serves bad while the others read (tag id → reason), e.g. an engineering unit that differs from the configuration. */
  readonly badTags?: Readonly<Record<string, string>>;
  /** Per-unit health for Modbus (unit id → state). */
  readonly units?: Readonly<Record<string, 'ok' | 'timeout' | 'error'>>;
}

export interface SubscribeOptions {
  /** Sampling (OPC UA) or polling (Modbus) interval, ms. */
  readonly intervalMs: number;
  /** Absolute deadband in the tag's unit (OPC UA DataChangeFilter; Modbus: suppress smaller changes). */
  readonly deadband?: number;
}

export interface Subscription {
  readonly tags: readonly string[];
  close(): Promise<void>;
}

export type ConnectorEvent =
  | { type: 'state'; from: ConnectorState; to: ConnectorState; reason?: string }
  | { type: 'stale'; subscription: number; ageMs: number }
  | { type: 'heartbeat_failed'; equipment: string; error: string };

export interface WriteResult {
  readonly tag: string;
  /** Value sent, in the tag's unit, after any codec rounding. */
  readonly written: number;
  /** Value read back from the equipment after the write. */
  readonly readBack: number | null;
  readonly readBackQuality: Quality;
  /** True when |readBack − written| ≤ the tag's readback_tolerance. */
  readonly verified: boolean;
  readonly status: string;
  readonly at: number;
}

/**
 * What the equipment reports after {@link WriteCapability.commandLkg}: its
 * supervisor tags read back right after the command. Values are in the
 * protocol's own form — OPC UA strings (`LKG-press-0007`), Modbus recipe
 * numbers (0 = SUPERVISED) — and null when a tag is not configured or did not
 * read good.
 */
export interface LkgCommandResult {
  readonly equipment: string;
  /** `LOST` or `ATTENDED` (Modbus 1 / 0); another value as the equipment reports it; `UNKNOWN` when it could not be read back. */
  readonly state: 'LOST' | 'ATTENDED' | (string & {});
  readonly activeRecipe: string | number | null;
  readonly lkgRecipe: string | number | null;
  readonly revertCount: number | null;
  /** The equipment is LOST and runs its LKG recipe: state LOST and activeRecipe equals lkgRecipe. */
  readonly verified: boolean;
  readonly at: number;
}

/**
 * The capability to write setpoints. Obtained once per connector by
 * `claimWriter()`; only src/engine/guarded-writer.ts may call that (an
 * architecture test enforces it).
 */
export interface WriteCapability {
  readonly connectorId: string;
  /**
   * Write one setpoint (value in the tag's configured unit) and read it back.
   * Throws LkError: a refusal before sending (LK_VALUE_INVALID, LK_TAG_*, LK_CODEC) or by the equipment
   * (LK_WRITE_FAILED with a Bad status, LK_MODBUS_*) left the value unchanged; an error whose
   * `detail.outcome` is `'unknown'` (timeouts, a channel lost mid-request) may have been applied.
   */
  write(tag: string, value: number): Promise<WriteResult>;
  /**
   * Command the equipment's own revert to its last known-good recipe (SupervisorState := LOST) and read
   * back the supervisor state. Never refused for policy reasons: it is the fail-safe (rule R8, a lost
   * model). Idempotent at the PLC — a command while already LOST reverts nothing again — so a caller may
   * repeat it after an unknown outcome.
   * Throws LkError LK_TAG_UNKNOWN when the equipment has no SupervisorState tag on this connector,
   * LK_TAG_NOT_WRITABLE when that tag cannot be written (a Modbus input register), and
   * LK_CONN_UNAVAILABLE / LK_CONN_TIMEOUT / LK_WRITE_FAILED as a write does (`detail.outcome` `'unknown'`:
   * the command may have been applied; LK_WRITE_FAILED `detail.status` is the OPC UA status or the
   * LK_MODBUS_* code of the refusal).
   */
  commandLkg(equipment: string): Promise<LkgCommandResult>;
  /**
   * Re-arm a LOST equipment for supervision (SupervisorState := ATTENDED, Modbus 0) and read back its supervisor
   * tags; `verified` when it then reports ATTENDED. The PLC decides: it refuses while no heartbeat arrives
   * (LK_WRITE_FAILED whose detail.status names the refusal). Only the guarded writer calls it, for a named person.
   * Throws as {@link commandLkg} does.
   */
  commandRearm(equipment: string): Promise<LkgCommandResult>;
}

export interface Connector {
  readonly id: string;
  readonly protocol: 'opcua' | 'modbus';
  /** Connect (and keep reconnecting with backoff until close()). Resolves on the first successful connection. */
  connect(): Promise<void>;
  close(): Promise<void>;
  /** Tags this connector serves, with what the equipment itself reports (units, ranges, types). */
  describe(): Promise<TagDescription[]>;
  /** Batched read. A bad or missing value comes back as a bad-quality sample, not an exception. */
  read(tags: readonly string[]): Promise<Sample[]>;
  subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<Subscription>;
  health(): ConnectorHealth;
  on(listener: (e: ConnectorEvent) => void): () => void;
  /**
   * Start writing the supervisor heartbeat of every equipment on this connection, except the equipment ids in
   * `skip` (PLCs linekeeper refuses to supervise: their watchdogs take them to LKG). Idempotent.
   */
  startHeartbeat(skip?: ReadonlySet<string>): void;
  /** Stop heartbeats (the PLC watchdog will revert to LKG: that is how tests prove R8). */
  stopHeartbeat(): void;
  /** Hand out the write capability. Second call throws LkError(LK_WRITER_CLAIMED). */
  claimWriter(): WriteCapability;
}
