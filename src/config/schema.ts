/**
 * Site configuration schema (zod). Strict everywhere: an unknown key is an
 * error, so a typo in a validated configuration never silently falls back to
 * a default. Cross-references (connections, tenants, tag names) are checked in
 * `validate.ts` after the shape is known to be right.
 */
import { z } from 'zod';

const id = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes, starting with a letter');
const tagName = z.string().regex(/^[A-Z][A-Za-z0-9]*$/, 'must be PascalCase letters and digits');

/** Largest delay a Node timer takes (2^31-1 ms, ~24.8 days); past it the timer fires after 1 ms, every time. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** A period or timeout in ms that a Node timer can hold (it also fits a PLC's UInt32). */
const timerMs = z.number().int().positive().max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (a Node timer overflows past it and fires every millisecond)`);

/** True when `tz` is an IANA time zone this runtime knows (Intl throws a RangeError otherwise). */
export function isKnownTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * OPC UA data types of a tag. `DoubleArray` is a one-dimensional array of
 * Double (node DataType Double, ValueRank 1: NIR spectra); `ByteString` is raw
 * bytes (camera frames). Neither may be a setpoint (load.ts refuses it).
 */
export const DataType = z.enum(['Boolean', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double', 'String', 'DoubleArray', 'ByteString']);
export const ModbusType = z.enum(['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64']);
export const ByteOrder = z.enum(['BE', 'LE']);

export const TagKind = z.enum(['setpoint', 'measurement', 'supervisor']);

const range = z.strictObject({ min: z.number(), max: z.number() });

const tagCommon = {
  /** Tag name inside its equipment, e.g. MainForce. Full tag id is `<equipment>.<name>`. */
  name: tagName,
  kind: TagKind,
  /** Engineering unit as a UCUM code (`kN`, `mm`, `Cel`, `%`, `g/min`, `{rev}/min`); `1` for dimensionless. */
  unit: z.string().min(1).regex(/^\S+$/, 'must not contain whitespace (a UCUM code has none; check for stray spaces)'),
  description: z.string().optional(),
  /** Instrument range (EURange); the approved design space is narrower and lives in the policy bundle. */
  range: range.optional(),
  /** Tolerance for read-back verification after a write, in the tag's unit. */
  readback_tolerance: z.number().nonnegative().optional(),
};

export const OpcUaTag = z.strictObject({
  ...tagCommon,
  /** Node id; without `ns=` it is resolved in the connection's namespace_uri, e.g. `s=press.Setpoints.MainForce`. */
  node_id: z.string().min(3),
  data_type: DataType,
});

export const ModbusTag = z.strictObject({
  ...tagCommon,
  table: z.enum(['holding', 'input']),
  /** Zero-based register address (protocol address, not the 4xxxx notation). */
  address: z.number().int().min(0).max(65535),
  type: ModbusType,
  byte_order: ByteOrder.default('BE'),
  word_order: ByteOrder.default('BE'),
  /** engineering value = raw × scale + offset */
  scale: z.number().refine((v) => v !== 0, 'must not be 0').default(1),
  offset: z.number().default(0),
});

export const Security = z.strictObject({
  mode: z.enum(['None', 'Sign', 'SignAndEncrypt']).default('None'),
  policy: z.enum(['None', 'Basic256Sha256']).default('None'),
});

export const OpcUaConnection = z.strictObject({
  id,
  protocol: z.literal('opcua'),
  /** `sim` = the embedded simulator's OPC UA endpoint; otherwise opc.tcp://host:port/path */
  endpoint: z.string().regex(/^(sim|opc\.tcp:\/\/.+)$/, 'must be "sim" or an opc.tcp:// URL'),
  namespace_uri: z.string().min(1),
  security: Security.default({ mode: 'None', policy: 'None' }),
  /** Data older than this (no notification, no successful read) marks a subscription stale and re-creates it. */
  max_data_age_ms: timerMs.default(5000),
  request_timeout_ms: timerMs.default(5000),
  keepalive_ms: timerMs.default(2000),
});

export const ModbusConnection = z.strictObject({
  id,
  protocol: z.literal('modbus'),
  /** `sim` = the embedded simulator's Modbus endpoint; otherwise host:port */
  endpoint: z.string().regex(/^(sim|[A-Za-z0-9.:[\]-]+:\d{1,5})$/, 'must be "sim" or host:port'),
  /** Per-request timeout; modbus-serial has none by default. */
  timeout_ms: timerMs.default(1000),
  poll_ms: timerMs.default(500),
});

export const Connection = z.discriminatedUnion('protocol', [OpcUaConnection, ModbusConnection]);

export const Heartbeat = z.strictObject({
  /** Must be below the PLC's WatchdogTimeoutMs (checked against the simulator's here, against each PLC's at start). */
  period_ms: timerMs.default(1000),
});

const equipmentCommon = {
  id,
  name: z.string().min(1),
  /** Equipment family, e.g. press, coater, nir, vision, plc, blender, fluidbed. */
  type: z.enum(['press', 'coater', 'nir', 'vision', 'plc', 'blender', 'fluidbed']),
  connection: id,
  heartbeat: Heartbeat.default({ period_ms: 1000 }),
};

export const OpcUaEquipment = z.strictObject({
  ...equipmentCommon,
  protocol: z.literal('opcua'),
  tags: z.array(OpcUaTag).min(1),
});

export const ModbusEquipment = z.strictObject({
  ...equipmentCommon,
  protocol: z.literal('modbus'),
  unit_id: z.number().int().min(0).max(247),
  tags: z.array(ModbusTag).min(1),
});

export const Equipment = z.discriminatedUnion('protocol', [OpcUaEquipment, ModbusEquipment]);

export const Tenant = z.strictObject({
  id,
  name: z.string().min(1),
  /** Product families this tenant runs on the line. */
  products: z.array(id).min(1),
});

export const SiteConfig = z.strictObject({
  /** Schema version of this file. */
  version: z.literal(1),
  site: z.strictObject({
    id,
    name: z.string().min(1),
    timezone: z.string().refine(isKnownTimeZone, 'unknown IANA time zone (e.g. UTC, Europe/Rome)').default('UTC'),
  }),
  /** Data directory (SQLite, keys, PKI, models); relative to the working directory. CLI --data overrides. */
  data_dir: z.string().regex(/^\S(.*\S)?$/, 'must not be empty or begin or end with whitespace').default('./data'),
  log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).default({ level: 'info' }),
  simulator: z
    .strictObject({
      /** Start the plant simulator in-process on free loopback ports (connections with endpoint `sim`). */
      embedded: z.boolean().default(false),
      time_scale: z.number().positive().max(10_000).default(1),
      seed: z.number().int().default(1),
      /** The simulated PLCs' watchdog timeout (a UInt32 on the PLC; a Node timer in the simulator). */
      watchdog_timeout_ms: timerMs.default(3000),
    })
    .default({ embedded: false, time_scale: 1, seed: 1, watchdog_timeout_ms: 3000 }),
  tenants: z.array(Tenant).min(1),
  products: z
    .array(
      z.strictObject({
        id,
        name: z.string().min(1),
        /** Tooling families approved for this product. */
        tooling: z.array(id).min(1),
      }),
    )
    .min(1),
  tooling: z.array(z.strictObject({ id, name: z.string().min(1), punch_diameter_mm: z.number().positive() })).min(1),
  line: z.strictObject({
    id,
    name: z.string().min(1),
    /** Equipment ids in process order. */
    equipment: z.array(id).min(1),
  }),
  connections: z.array(Connection).min(1),
  equipment: z.array(Equipment).min(1),
  /** Policy bundle folder (design space, allow-lists, autonomy): relative to this file. */
  policy: z.strictObject({ bundle: z.string().min(1) }),
  audit: z
    .strictObject({
      checkpoint_every: z.number().int().positive().default(1000),
      checkpoint_interval_s: z.number().int().positive().max(Math.floor(MAX_TIMER_MS / 1000), `must be at most ${Math.floor(MAX_TIMER_MS / 1000)} s (a Node timer overflows past it)`).default(300),
    })
    .default({ checkpoint_every: 1000, checkpoint_interval_s: 300 }),
  /** The REST API (`serve`): loopback by default; expose it on a plant network deliberately. */
  api: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8080),
      /** Lifetime of a bearer token. */
      token_ttl_s: z.number().int().min(60).max(86_400).default(900),
      /** Consecutive failed sign-ins or signing re-authentications that lock an account. */
      max_failed_attempts: z.number().int().min(1).max(100).default(5),
      /** Concurrent event streams one user may hold open. */
      streams_per_user: z.number().int().min(1).max(100).default(4),
      /**
       * GET /metrics answers loopback peers only; with this file (one token of at least 16 characters, mode 0600)
       * other peers may scrape with `Authorization: Bearer <token>`.
       */
      metrics_token_file: z.string().min(1).optional(),
    })
    .default({ host: '127.0.0.1', port: 8080, token_ttl_s: 900, max_failed_attempts: 5, streams_per_user: 4 }),
  /** Online backups and WAL upkeep of the database (src/ops/backup.ts). */
  maintenance: z
    .strictObject({
      /** Folder of the scheduled backups; default `<data_dir>/backups` (better: another disk, or a mounted share). */
      backup_dir: z.string().min(1).optional(),
      /** Hours between scheduled backups; 0 turns the schedule off (`linekeeper backup` still works). */
      backup_every_h: z.number().min(0).max(24 * 31).default(24),
      /** Scheduled backups kept (older ones are deleted after a new one verified). */
      backup_keep: z.number().int().min(1).max(1000).default(14),
      /** Seconds between WAL checkpoints (PASSIVE; TRUNCATE when the WAL has grown past wal_max_mb). */
      wal_checkpoint_s: z.number().int().min(1).max(86_400).default(300),
      wal_max_mb: z.number().int().min(1).max(65_536).default(64),
    })
    .default({ backup_every_h: 24, backup_keep: 14, wal_checkpoint_s: 300, wal_max_mb: 64 }),
});

export type SiteConfig = z.infer<typeof SiteConfig>;
export type EquipmentConfig = z.infer<typeof Equipment>;
export type OpcUaEquipmentConfig = z.infer<typeof OpcUaEquipment>;
export type ModbusEquipmentConfig = z.infer<typeof ModbusEquipment>;
export type ConnectionConfig = z.infer<typeof Connection>;
export type OpcUaConnectionConfig = z.infer<typeof OpcUaConnection>;
export type ModbusConnectionConfig = z.infer<typeof ModbusConnection>;
export type OpcUaTagConfig = z.infer<typeof OpcUaTag>;
export type ModbusTagConfig = z.infer<typeof ModbusTag>;
export type TagConfig = OpcUaTagConfig | ModbusTagConfig;

/**
 * Full tag id `<equipment>.<tag>`. Here, beside the tag schema, so that connectors and pure code name
 * tags without importing the configuration file loader.
 */
export function tagId(equipmentId: string, tagName: string): string {
  return `${equipmentId}.${tagName}`;
}
