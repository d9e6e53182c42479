/**
 * Site configuration schema (zod). Strict everywhere: an unknown key is an
 * error, so a typo in a validated configuration never silently falls back to
 * a default. Cross-references (connections, tenants, tag names) are checked in
 * `load.ts` (`loadConfig`) after the shape is known to be right.
 */
import { isKnownTimeZone } from '../domain/site-time.js';
import { MEANING_ID_RE, MEANING_TEXT_MAX, meaningListIssues, SIGNATURE_PURPOSES } from '../domain/signature-meanings.js';
import { z } from 'zod';

const id = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes, starting with a letter');
const tagName = z.string().regex(/^[A-Z][A-Za-z0-9]*$/, 'must be PascalCase letters and digits');

/** Largest delay a Node timer takes (2^31-1 ms, ~24.8 days); past it the timer fires after 1 ms, every time. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** A period or timeout in ms that a Node timer can hold (it also fits a PLC's UInt32). */
const timerMs = z.number().int().positive().max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} ms (a Node timer overflows past it and fires every millisecond)`);

/**
 * OPC UA data types of a tag. `DoubleArray`, `FloatArray` and the integer
 * arrays are one-dimensional arrays of that type (node ValueRank 1: NIR
 * spectra, a vendor's per-station forces); `ByteString` is raw bytes (camera
 * frames). None of them may be a setpoint (load.ts refuses it).
 */
export const DataType = z.enum(['Boolean', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Float', 'Double', 'String', 'DoubleArray', 'FloatArray', 'Int16Array', 'UInt16Array', 'Int32Array', 'UInt32Array', 'ByteString']);
/** The array data types (node ValueRank 1) and their element type. */
export const ARRAY_ELEMENT: Readonly<Record<string, 'Double' | 'Float' | 'Int16' | 'UInt16' | 'Int32' | 'UInt32'>> = {
  DoubleArray: 'Double', FloatArray: 'Float', Int16Array: 'Int16', UInt16Array: 'UInt16', Int32Array: 'Int32', UInt32Array: 'UInt32',
};
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
  /**
   * Node id; without `ns=`/`nsu=` it is resolved in the connection's namespace_uri, e.g.
   * `s=press.Setpoints.MainForce`, `i=6001`. A node of namespace 0 (the standard's own) needs `ns=0;i=2258`.
   */
  node_id: z.string().min(3),
  data_type: DataType,
  /** value in `unit` = raw × scale + offset (before any unit alias); a write sends (value − offset) / scale. Numeric tags only. */
  scale: z.number().refine((v) => v !== 0 && Number.isFinite(v), 'must be a finite number other than 0').optional(),
  offset: z.number().optional(),
  /** Value → name of an integer tag (`{ 0: STOPPED, 1: RUNNING }`): the tag reads as the name; a value without a name reads bad (BadOutOfRange). Not on setpoints. */
  enum: z.record(z.string().regex(/^-?\d+$/, 'must be an integer value'), z.string().min(1)).refine((m) => Object.keys(m).length > 0, 'names at least one value').optional(),
});

/**
 * A vendor's unit label as an OPC UA server shows it (EngineeringUnits display name, e.g. `kp`, `Tabl./h`)
 * mapped to a UCUM unit: value in `unit` = value in the label × factor + offset.
 */
export const UnitAlias = z.strictObject({
  unit: z.string().min(1).regex(/^\S+$/, 'must not contain whitespace (a UCUM code has none; check for stray spaces)'),
  factor: z.number().refine((v) => v !== 0 && Number.isFinite(v), 'must be a finite number other than 0').default(1),
  offset: z.number().default(0),
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

/** Largest value of an integer type (OPC UA data types and Modbus register types). */
const TYPE_MAX: Readonly<Record<string, number>> = {
  SByte: 127, Byte: 255, Int16: 32_767, UInt16: 65_535, Int32: 2 ** 31 - 1, UInt32: 2 ** 32 - 1,
  int16: 32_767, uint16: 65_535, int32: 2 ** 31 - 1, uint32: 2 ** 32 - 1,
};

/** The largest value (a heartbeat counter's wrap point) a tag of this type holds; null for a type that is not an integer. */
export function counterMax(type: string): number | null {
  return TYPE_MAX[type] ?? null;
}

export const Heartbeat = z.strictObject({
  /** Must be below the PLC's WatchdogTimeoutMs (checked against the simulator's here, against each PLC's at start). */
  period_ms: timerMs.default(1000),
  /**
   * `counter` (default): an integer linekeeper increments every period, wrapping to 0 past the tag's type (or
   * `wrap_at`); `toggle`: a life bit (Boolean, or an integer 0/1) linekeeper inverts every period.
   */
  kind: z.enum(['counter', 'toggle']).optional(),
  /** Highest counter value before it wraps to 0 (default: the largest the tag's data type holds). */
  wrap_at: z.number().int().positive().max(2 ** 32 - 1).optional(),
});

/** A SupervisorState value as a PLC holds it: a word, an integer code, or a bit. */
const StateValue = z.union([z.string().min(1).max(64), z.number().int().min(-(2 ** 31)).max(2 ** 32 - 1), z.boolean()]);

/**
 * How linekeeper supervises one PLC (connectors/supervision.ts). `monitor_only`: read only — no heartbeat, no
 * setpoint write, no command; the supervisor tags are optional. `state`: what the PLC's SupervisorState values
 * mean (default: a String tag `ATTENDED` / `LOST`, a numeric one 0 / 1) and what is written to command the revert
 * (default: the first fallback value) and the re-arm (default: the first supervised value).
 */
export const Supervision = z.strictObject({
  mode: z.enum(['supervised', 'monitor_only']).optional(),
  state: z
    .strictObject({
      supervised: z.array(StateValue).min(1),
      fallback: z.array(StateValue).min(1),
      revert: StateValue.optional(),
      rearm: StateValue.optional(),
    })
    .optional(),
});

const equipmentCommon = {
  id,
  name: z.string().min(1),
  /** Equipment family, e.g. press, coater, nir, vision, plc, blender, fluidbed. */
  type: z.enum(['press', 'coater', 'nir', 'vision', 'plc', 'blender', 'fluidbed']),
  connection: id,
  heartbeat: Heartbeat.default({ period_ms: 1000 }),
  supervision: Supervision.optional(),
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

/** Signature algorithms a site's identity provider may use (never `none`, never an HMAC secret shared with us). */
export const JwsAlgorithm = z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);
const claimName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_:-]*(\.[A-Za-z_][A-Za-z0-9_:-]*)*$/, 'must be a claim name, or a dotted path such as realm_access.roles');

/**
 * OIDC bearer tokens (JWT) of the site's identity provider, verified with the provider's public keys: a JWKS
 * file (air-gapped sites) or the provider's JWKS URL (the only endpoint contacted). Claims map to one
 * linekeeper role (`role_map`, first match in the order written) and to tenants (a claim, optionally mapped,
 * or one fixed list).
 */
const LOCKOUT_DEFAULTS = { delay_s: 60, max_delay_s: 3600, account_alert_failures: 20 };
const LockoutConfig = z
  .strictObject({
    delay_s: z.number().int().min(1).max(86_400).default(60),
    max_delay_s: z.number().int().min(1).max(7 * 86_400).default(3600),
    account_alert_failures: z.number().int().min(2).max(100_000).default(20),
  })
  .refine((l) => l.max_delay_s >= l.delay_s, { message: 'max_delay_s is at least delay_s', path: ['max_delay_s'] });
const PASSWORD_POLICY_DEFAULTS = { min_length: 12, min_strength: 3, max_age_days: 180, history: 5 };
/** Only ever stricter than 12 characters and strength 2 of 4 (zxcvbn's score). */
const PasswordPolicyConfig = z.strictObject({
  min_length: z.number().int().min(12).max(128).default(12),
  min_strength: z.number().int().min(2).max(4).default(3),
  /** Days before a password must be changed; 0: never. */
  max_age_days: z.number().int().min(0).max(3650).default(180),
  /** Previous passwords a person may not choose again. */
  history: z.number().int().min(0).max(24).default(5),
});

export const Oidc = z
  .strictObject({
    /** The `iss` every token must carry, exactly. */
    issuer: z.string().url(),
    /** The `aud` a token must name (one of them). */
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** JWKS JSON file, relative to the configuration file. */
    jwks_file: z.string().min(1).optional(),
    /** The provider's JWKS endpoint (https, or http on loopback). */
    jwks_url: z.string().url().refine((u) => /^https:\/\//.test(u) || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(u), 'must be https (http only on loopback)').optional(),
    algorithms: z.array(JwsAlgorithm).min(1).default(['RS256', 'ES256']),
    /** Leeway for exp/nbf/iat between the provider's clock and ours. */
    clock_tolerance_s: z.number().int().min(0).max(300).default(30),
    /** The claim whose value is the person's linekeeper user id (falls back to `sub`). */
    user_claim: claimName.default('preferred_username'),
    /** The claim listing the person's groups or roles. */
    roles_claim: claimName.default('groups'),
    /** Value of `roles_claim` → linekeeper role; the first entry (in file order) the person has wins. */
    role_map: z.record(z.string().min(1), z.enum(['operator', 'process_engineer', 'qa_reviewer', 'auditor', 'admin'])).refine((m) => Object.keys(m).length > 0, 'maps at least one value'),
    /** The claim listing the person's tenants; its values are tenant ids, or keys of `tenant_map`. */
    tenants_claim: claimName.optional(),
    /** Value of `tenants_claim` (or of `roles_claim` when there is no tenants claim) → tenant ids. */
    tenant_map: z.record(z.string().min(1), z.array(id).min(1)).optional(),
    /** Tenants of every SSO user when neither a tenants claim nor a tenant map is given. */
    tenants: z.array(id).min(1).optional(),
    /** A signature by an SSO user needs a bearer token whose `auth_time` is at most this old (11.200: a fresh sign-in). */
    signing_max_auth_age_s: z.number().int().min(30).max(3600).default(300),
    /**
     * Accept the provider's ID tokens (header `typ` absent or `JWT`) besides RFC 9068 access tokens (`typ: at+jwt`).
     * Off by default: an ID token is meant for the client that asked for it, not as a bearer credential.
     */
    accept_id_tokens: z.boolean().default(false),
  })
  .refine((o) => (o.jwks_file === undefined) !== (o.jwks_url === undefined), { message: 'give exactly one of jwks_file and jwks_url', path: ['jwks_file'] })
  .refine((o) => o.tenants_claim !== undefined || o.tenant_map !== undefined || o.tenants !== undefined, { message: 'say which tenants an SSO user works for: tenants_claim, tenant_map or tenants', path: ['tenants'] });
export type OidcConfig = z.infer<typeof Oidc>;
/** A Sparkplug B group or edge node id: a topic level, so no `/`, `+`, `#` or whitespace. */
const sparkplugId = z.string().min(1).max(128).regex(/^[^/+#\s]+$/, 'must be one MQTT topic level: no "/", "+", "#" or whitespace');

/**
 * Optional publishing to the plant's MQTT broker (Sparkplug B, connectors/mqtt). Absent: nothing is opened.
 * File paths are relative to the configuration file.
 */
export const MqttConfig = z
  .strictObject({
    url: z.string().regex(/^(mqtt|mqtts):\/\/[^\s]+$/, 'must be an mqtt:// or mqtts:// URL'),
    /** MQTT client id; default `linekeeper-<group>-<edge node>`. */
    client_id: z.string().min(1).max(128).optional(),
    group_id: sparkplugId,
    edge_node_id: sparkplugId,
    /**
     * Sparkplug host id of the primary host application: births wait until its `spBv1.0/STATE/<id>` says online,
     * and while it is offline data is held in the outbox and replayed as historical after the next births.
     */
    primary_host_id: sparkplugId.optional(),
    tls: z
      .strictObject({
        /** CA bundle (PEM) that signed the broker's certificate. */
        ca: z.string().min(1).optional(),
        /** Client certificate and key (PEM) for mutual TLS: both or neither. */
        cert: z.string().min(1).optional(),
        key: z.string().min(1).optional(),
      })
      .refine((t) => (t.cert === undefined) === (t.key === undefined), { message: 'cert and key go together: give both or neither', path: ['cert'] })
      .optional(),
    username: z.string().min(1).optional(),
    /** File holding the password (first line): never the password itself in the configuration. */
    password_file: z.string().min(1).optional(),
    keepalive_s: z.number().int().min(1).max(65_535).default(30),
    /** Wait before reconnecting to a broker that went away. */
    reconnect_ms: timerMs.default(2000),
    /** Store-and-forward bound: past either, the oldest queued messages are dropped (one audit entry per drop). */
    outbox: z
      .strictObject({
        max_messages: z.number().int().min(10).max(100_000_000).default(1_000_000),
        max_bytes: z.number().int().min(64 * 1024).max(2 ** 40).default(256 * 1024 * 1024),
      })
      .default({ max_messages: 1_000_000, max_bytes: 256 * 1024 * 1024 }),
  })
  .refine((m) => m.password_file === undefined || m.username !== undefined, { message: 'password_file needs a username', path: ['password_file'] })
  .refine((m) => m.tls === undefined || m.url.startsWith('mqtts://'), { message: 'tls files need an mqtts:// url', path: ['tls'] });

/**
 * One signature meaning a signer may pick: a stable id, its words with placeholders filled from the signed object
 * (`QA release of batch {batch}`), the purposes it is for, and the one decision of them it goes with (required for a
 * purpose that has decisions, left out otherwise: meaningListIssues).
 */
export const SignatureMeaningConfig = z.strictObject({
  id: z.string().regex(MEANING_ID_RE, 'must be lower-case letters and digits, words joined by dashes (e.g. qa-release)').max(64),
  text: z
    .string()
    .min(3)
    .max(MEANING_TEXT_MAX)
    .regex(/^\S(.*\S)?$/, 'must not begin or end with whitespace')
    .refine((t) => !/[\u0000-\u001f\u007f]/.test(t), 'must be one line without control characters'),
  for: z.array(z.enum(SIGNATURE_PURPOSES)).min(1),
  decision: z.string().min(1).optional(),
});

export const SignaturesConfig = z.strictObject({
  meanings: z
    .array(SignatureMeaningConfig)
    .min(1)
    .superRefine((list, ctx) => {
      for (const i of meaningListIssues(list)) ctx.addIssue({ code: 'custom', path: i.path, message: i.message });
    })
    .optional(),
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
      /** Start the plant simulator with the daemon on free loopback ports (connections with endpoint `sim`): `serve` runs it as a child process. */
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
    /**
     * Where the line says which batch phase it is in (the PLC's phase logic starts each phase; linekeeper waits for
     * it): a tag (`<equipment>.<Tag>`) and, per phase, the values that mean it — strings, or integers such as a
     * PackML/ISA-TR88 UnitState or an ISA-88 state. Default: `plc.BatchPhase` holding the phase's name.
     */
    phase: z
      .strictObject({
        tag: z.string().regex(/^[a-z][a-z0-9-]*\.[A-Z][A-Za-z0-9]*$/, 'must be <equipment>.<Tag>'),
        values: z.partialRecord(z.enum(['BLEND', 'DRY', 'COMPRESS', 'COAT']), z.array(z.union([z.string().min(1), z.number().int()])).min(1)).optional(),
        /** Longest wait for the PLC to report a phase before the step is held for a person. */
        timeout_s: z.number().int().min(1).max(86_400).default(3600),
      })
      .optional(),
  }),
  connections: z.array(Connection).min(1),
  equipment: z.array(Equipment).min(1),
  /**
   * Equipment roles → this site's tags (`press.MainForce: kp200.Hauptdruck`), or an equipment role → a unit
   * (`press: kp200`: kp200's tags of the roles' names play them): the run engine, the agents and the
   * twin address the line by role (docs/roles.md lists them with units); a role not listed maps to the site tag of
   * the same id, if there is one. A step whose roles the site does not map is skipped or held, with the reason.
   */
  roles: z.record(z.string().regex(/^[a-z][a-z0-9-]*(\.[A-Z][A-Za-z0-9]*)?$/, 'must be a role such as press.MainForce, or an equipment role such as press'), z.string().regex(/^[a-z][a-z0-9-]*(\.[A-Z][A-Za-z0-9]*)?$/, 'must be <equipment>.<Tag> (or <equipment> for an equipment role)')).optional(),
  /**
   * Vendor unit labels → UCUM, for every OPC UA tag whose server EngineeringUnits show that label
   * (`kp: { unit: N, factor: 9.80665 }`). The tag keeps its UCUM `unit`; the alias's unit must be it or convert to it.
   */
  unit_aliases: z.record(z.string().min(1), UnitAlias).optional(),
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
      /** Longest a signed-in session lives through renewals (POST /v1/auth/token/refresh) before the password is asked again. */
      session_max_s: z.number().int().min(60).max(7 * 86_400).default(43_200),
      /** Sign-in throttling: failed sign-ins in `sign_in_window_s` from one address / for one account before 429. */
      sign_in_window_s: z.number().int().min(1).max(86_400).default(60),
      sign_in_failures_per_address: z.number().int().min(1).max(10_000).default(10),
      sign_in_failures_per_account: z.number().int().min(1).max(1000).default(3),
      /** Single sign-on with the site's OIDC provider (bearer JWTs beside the local users); absent: local users only. */
      oidc: Oidc.optional(),
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8080),
      /** Lifetime of a bearer token. */
      token_ttl_s: z.number().int().min(60).max(86_400).default(900),
      /** Failed passwords (sign-in or signing) for one account from one source before that source waits (lock-out per account and source). */
      max_failed_attempts: z.number().int().min(1).max(100).default(5),
      /** The wait after `max_failed_attempts`: `delay_s`, doubling with each further failure up to `max_delay_s`; an alert (audit + metric) when one account reaches `account_alert_failures` from all sources. */
      lockout: LockoutConfig.default(LOCKOUT_DEFAULTS),
      /** Passwords of local users (21 CFR 11.300(b)). */
      password_policy: PasswordPolicyConfig.default(PASSWORD_POLICY_DEFAULTS),
      /** Roles an administrator may never hold, besides the signing roles (qa_reviewer, process_engineer) that are always in the set. */
      separation_of_duties: z.strictObject({ incompatible_with_admin: z.array(z.enum(['operator', 'process_engineer', 'qa_reviewer', 'auditor'])).default([]) }).default({ incompatible_with_admin: [] }),
      /** HTTPS for the API (PEM files, relative to the configuration file): needed for any use beyond loopback. */
      tls: z.strictObject({ cert: z.string().min(1), key: z.string().min(1) }).optional(),
      /** Concurrent event streams one user may hold open. */
      streams_per_user: z.number().int().min(1).max(100).default(4),
      /**
       * GET /metrics answers loopback peers only; with this file (one token of at least 16 characters, mode 0600)
       * other peers may scrape with `Authorization: Bearer <token>`.
       */
      metrics_token_file: z.string().min(1).optional(),
    })
    .default({
      host: '127.0.0.1', port: 8080, token_ttl_s: 900, max_failed_attempts: 5, streams_per_user: 4, session_max_s: 43_200,
      sign_in_window_s: 60, sign_in_failures_per_address: 10, sign_in_failures_per_account: 3,
      lockout: LOCKOUT_DEFAULTS, password_policy: PASSWORD_POLICY_DEFAULTS, separation_of_duties: { incompatible_with_admin: [] },
    }),
  /**
   * Electronic signatures (21 CFR 11.50, EU GMP Annex 11 §14): the controlled list of meanings a signer picks from
   * (src/domain/signature-meanings.ts). A purpose the list names nothing for keeps linekeeper's built-in meanings.
   */
  signatures: SignaturesConfig.optional(),
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
  /**
   * How long the site keeps its GMP records (21 CFR 11.10(c), EU GMP Annex 11 §17): whole years from the end of a
   * run. Read by `linekeeper archive prune`, which refuses to drop anything whose period has not ended (and anything
   * not archived). At least 1 year (21 CFR 211.180: one year after the batch's expiry at the least); default 10.
   */
  retention: z
    .strictObject({ years: z.number().int().min(1, 'must be at least 1 (a GMP record is kept at least a year after the batch\'s expiry)').max(100).default(10) })
    .default({ years: 10 }),
  /** Sparkplug B publishing to the plant's broker (the Unified Namespace). Absent (the air-gapped default): off. */
  mqtt: MqttConfig.optional(),
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
export type MqttConfig = z.infer<typeof MqttConfig>;
export type UnitAliasConfig = z.infer<typeof UnitAlias>;
export type TagConfig = OpcUaTagConfig | ModbusTagConfig;

/**
 * Full tag id `<equipment>.<tag>`. Here, beside the tag schema, so that connectors and pure code name
 * tags without importing the configuration file loader.
 */
export function tagId(equipmentId: string, tagName: string): string {
  return `${equipmentId}.${tagName}`;
}
