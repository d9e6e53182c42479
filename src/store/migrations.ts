/**
 * The schema of the linekeeper database, as an ordered, forward-only list of
 * migrations. Each migration runs once, inside one transaction with the row
 * that records it in `schema_migration`, so a crash mid-migration leaves the
 * previous version intact.
 *
 * To add tables for another module, APPEND a migration with the next version
 * number at the end of {@link MIGRATIONS}. Never edit or reorder a migration
 * that has shipped: a site database that already ran it would silently differ
 * from a fresh one. The audit tables come first because every later table's
 * state changes are audited in the same transaction.
 */
import type { Database } from 'better-sqlite3';
import { LkError } from '../errors.js';

export interface Migration {
  /** 1, 2, 3, … without gaps; the list is sorted by it. */
  readonly version: number;
  /** Short, stable name (shown by `schema_migration`, never parsed). */
  readonly name: string;
  /** SQL script, or a function for data migrations that need code. */
  readonly up: string | ((db: Database) => void);
  /**
   * Rebuilds a table that others reference (SQLite's way to change a CHECK constraint): foreign keys are off
   * while it runs — a pragma that only takes effect outside a transaction — and `foreign_key_check` must find
   * nothing before the migration commits.
   */
  readonly rebuildsReferencedTable?: true;
}

/**
 * Rebuild `table` as `create` (which names it `<table>_new`), copying every row (the columns are the same),
 * then the indexes of `indexes`. SQLite's documented procedure for a change no ALTER TABLE makes.
 */
function rebuild(db: Database, table: string, create: string, indexes: string): void {
  db.exec(`${create};
    INSERT INTO ${table}_new SELECT * FROM ${table};
    DROP TABLE ${table};
    ALTER TABLE ${table}_new RENAME TO ${table};
    ${indexes}`);
}

/** Refuse every UPDATE and DELETE on an append-only table (R12, Part 11 §11.10(e)). */
function appendOnly(table: string): string {
  return `
    CREATE TRIGGER ${table}_no_update BEFORE UPDATE ON ${table}
      BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: ${table} is append-only'); END;
    CREATE TRIGGER ${table}_no_delete BEFORE DELETE ON ${table}
      BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: ${table} is append-only'); END;`;
}


/**
 * Migration 14's copy of a version-13 `audit_entry` row into its canonical bytes: the entry's RFC 8785 canonical
 * JSON built from the row's columns in SQL (keys in canonical order, strings by `json_quote`, the JSON columns
 * spliced in as stored, absent fields omitted). Frozen with the migration: it states what the old columns meant,
 * whatever the audit module later becomes. A row append could not have written (a column of another type, a JSON
 * column that is not one JSON value, a NUL in one) gives NULL here, and the migration keeps such a row as a
 * record of what was there ({@link V13_UNREADABLE}) under its old hash — which that record does not hash to, so
 * `audit verify` still names the damage at its seq. Rows that verified before verify after: the same bytes.
 */
export const V13_BODY = ((): string => {
  const SAFE = Number.MAX_SAFE_INTEGER;
  const jsonCol = (c: string): string => `(${c} IS NULL OR (typeof(${c}) = 'text' AND instr(${c}, char(0)) = 0 AND json_valid(${c})))`;
  const textCol = (c: string, nullable: boolean): string => (nullable ? `(${c} IS NULL OR typeof(${c}) = 'text')` : `typeof(${c}) = 'text'`);
  const opt = (key: string, v: string): string => `',"${key}":' || ${v}`;
  const quotedOpt = (c: string): string => `CASE WHEN ${c} IS NULL THEN NULL ELSE json_quote(${c}) END`;
  const subject = ['agent', 'batch', 'reviewer', 'run', 'setpoint', 'tool'];
  const wellTyped = [
    `typeof(seq) = 'integer' AND seq BETWEEN ${-SAFE} AND ${SAFE}`,
    ...['ts', 'actor', 'kind', 'action', 'prev_hash'].map((c) => textCol(c, false)),
    ...['reason', ...subject].map((c) => textCol(c, true)),
    `(intent IS NULL OR (typeof(intent) = 'integer' AND intent BETWEEN ${-SAFE} AND ${SAFE}))`,
    ...['args', 'result', 'old_value', 'new_value', 'signature'].map(jsonCol),
  ].join(' AND ');
  const envelope = `concat(${[
    `'{"action":'`, 'json_quote(action)', `',"actor":'`, 'json_quote(actor)', opt('args', 'args'), opt('intent', 'intent'),
    `',"kind":'`, 'json_quote(kind)', opt('new', 'new_value'), opt('old', 'old_value'), `',"prev_hash":'`, 'json_quote(prev_hash)',
    opt('reason', quotedOpt('reason')), opt('result', 'result'), `',"seq":'`, 'seq', opt('signature', 'signature'),
    `',"subject":{'`, `substr(concat(${subject.map((k) => opt(k, quotedOpt(k))).join(', ')}), 2)`, `'}'`,
    `',"tenant":'`, 'json_quote(tenant)', `',"ts":'`, 'json_quote(ts)', `',"v":1}'`,
  ].join(', ')})`;
  return `CASE WHEN ${wellTyped} THEN ${envelope} END`;
})();

/** What migration 14 keeps of a row it cannot read as an entry: every column, as SQL literals (`quote`), never hashed to. */
export const V13_UNREADABLE = `json_object('unreadable_v13_row', json_array(${[
  'seq', 'ts', 'actor', 'kind', 'action', 'run', 'batch', 'agent', 'tool', 'setpoint', 'reviewer',
  'args', 'result', 'reason', 'old_value', 'new_value', 'intent', 'signature', 'prev_hash',
].map((c) => `quote(${c})`).join(', ')}))`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'audit: hash-chained entries, chains, signed checkpoints',
    up: `
      -- One row per entry; (tenant, seq) is the chain position. JSON columns hold
      -- RFC 8785 canonical JSON text; NULL means "absent" (omitted from the hash).
      CREATE TABLE audit_entry (
        tenant     TEXT    NOT NULL,
        seq        INTEGER NOT NULL,
        ts         TEXT    NOT NULL,
        actor      TEXT    NOT NULL,
        kind       TEXT    NOT NULL,
        action     TEXT    NOT NULL,
        run        TEXT,
        batch      TEXT,
        agent      TEXT,
        tool       TEXT,
        setpoint   TEXT,
        reviewer   TEXT,
        args       TEXT,
        result     TEXT,
        reason     TEXT,
        old_value  TEXT,
        new_value  TEXT,
        intent     INTEGER,
        signature  TEXT,
        prev_hash  TEXT    NOT NULL,
        hash       TEXT    NOT NULL,
        PRIMARY KEY (tenant, seq)
      ) WITHOUT ROWID;
      -- Partial indexes: most entries carry only some subject references.
      CREATE INDEX audit_entry_run      ON audit_entry (tenant, run, seq)      WHERE run IS NOT NULL;
      CREATE INDEX audit_entry_batch    ON audit_entry (tenant, batch, seq)    WHERE batch IS NOT NULL;
      CREATE INDEX audit_entry_agent    ON audit_entry (tenant, agent, seq)    WHERE agent IS NOT NULL;
      CREATE INDEX audit_entry_tool     ON audit_entry (tenant, tool, seq)     WHERE tool IS NOT NULL;
      CREATE INDEX audit_entry_reviewer ON audit_entry (tenant, reviewer, seq) WHERE reviewer IS NOT NULL;
      CREATE INDEX audit_entry_intent   ON audit_entry (tenant, intent)        WHERE intent IS NOT NULL;
      CREATE INDEX audit_entry_ts       ON audit_entry (tenant, ts);
      CREATE INDEX audit_entry_intents  ON audit_entry (tenant, seq)         WHERE kind = 'intent';
      ${appendOnly('audit_entry')}

      -- Every chain that ever had an entry, so a chain whose rows were all removed is still known.
      CREATE TABLE audit_chain (
        tenant     TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
      ) WITHOUT ROWID;
      ${appendOnly('audit_chain')}

      -- Signed checkpoints (also appended to <dataDir>/audit-checkpoints.log).
      CREATE TABLE audit_checkpoint (
        tenant    TEXT    NOT NULL,
        seq       INTEGER NOT NULL,
        head_hash TEXT    NOT NULL,
        ts        TEXT    NOT NULL,
        key_id    TEXT    NOT NULL,
        sig       TEXT    NOT NULL,
        PRIMARY KEY (tenant, seq)
      ) WITHOUT ROWID;
      ${appendOnly('audit_checkpoint')}
    `,
  },
  {
    version: 2,
    name: 'policy: accepted bundle versions (change control)',
    up: `
      -- One row per policy bundle version the daemon accepted under change control;
      -- the newest row is what a changed bundle is compared with at the next start.
      -- Its audit entry (site chain, kind config_change) commits in the same transaction.
      CREATE TABLE policy_acceptance (
        id           INTEGER PRIMARY KEY,
        version      TEXT NOT NULL,
        change_ref   TEXT NOT NULL,
        approver     TEXT NOT NULL,
        role         TEXT NOT NULL,
        reason       TEXT NOT NULL,
        accepted_at  TEXT NOT NULL
      );
      ${appendOnly('policy_acceptance')}`,
  },
  {
    version: 3,
    name: 'engine: guarded writer pending queue, last moves, autonomy state',
    up: `
      -- State tables (rows change and go): their history is the audit trail, whose
      -- entry commits in the same transaction as every change of a row here.

      -- needs_qa and reviewer-pending writes acknowledged to an agent; a row leaves only
      -- with an audited decision (written, denied, rejected, superseded).
      CREATE TABLE pending_write (
        id            TEXT PRIMARY KEY,
        tenant        TEXT    NOT NULL,
        proposal_id   TEXT    NOT NULL,
        proposal      TEXT    NOT NULL,            -- the WriteProposal as JSON, as the agent sent it
        vector_hash   TEXT    NOT NULL,
        needs         TEXT    NOT NULL CHECK (needs IN ('qa', 'reviewer')),
        since         INTEGER NOT NULL,            -- epoch ms of the first queuing
        reasons       TEXT    NOT NULL,            -- JSON array of policy reason codes
        bundle        TEXT,                        -- policy bundle version it was queued under
        created_seq   INTEGER NOT NULL,            -- audit seq (tenant chain) of the entry that queued this vector
        approving     TEXT                         -- JSON of an approval being executed; set only while it runs
      );
      CREATE INDEX pending_write_tenant ON pending_write (tenant, since);

      -- Last move per setpoint (the rate-of-change check); the equipment is one, whatever the tenant.
      CREATE TABLE setpoint_last_move (
        setpoint   TEXT PRIMARY KEY,
        value      REAL    NOT NULL,               -- in the setpoint's unit
        at         INTEGER NOT NULL,               -- epoch ms
        tenant     TEXT    NOT NULL,
        audit_seq  INTEGER NOT NULL                -- outcome entry that recorded the move
      ) WITHOUT ROWID;

      -- Autonomy levels changed at run time (the bundle gives the starting levels).
      -- agent '*' = the ceiling of a setpoint; setpoint '*' = the agent on every setpoint.
      CREATE TABLE autonomy_level (
        agent        TEXT NOT NULL,
        setpoint     TEXT NOT NULL,
        level        TEXT NOT NULL CHECK (level IN ('L0', 'L1', 'L2', 'L3')),
        changed_by   TEXT NOT NULL,
        role         TEXT,
        change_ref   TEXT,
        reason       TEXT,
        changed_at   TEXT NOT NULL,
        bundle       TEXT NOT NULL,
        audit_seq    INTEGER NOT NULL,             -- autonomy_change entry on the site chain
        PRIMARY KEY (agent, setpoint),
        CHECK (agent <> '*' OR setpoint <> '*')
      ) WITHOUT ROWID;`,
  },
  {
    version: 4,
    name: 'engine: arbitration ownership windows and pending escalations',
    up: `
      -- Arbitration state (rules 3 and the deadlock escalation), so a restart neither frees a
      -- setpoint inside its ownership window nor forgets a deadlock waiting for a human. Rows
      -- change in the same transaction as the audit entry that records the arbitration step.

      -- The live owner of a contested setpoint until expires_at (an expired row is ignored).
      CREATE TABLE arbitration_owner (
        setpoint    TEXT PRIMARY KEY,
        agent       TEXT    NOT NULL,
        request_id  TEXT    NOT NULL,
        ownership   TEXT    NOT NULL,              -- the Ownership as JSON (request, attribute, score, value)
        since       INTEGER NOT NULL,              -- epoch ms
        expires_at  INTEGER NOT NULL,              -- epoch ms
        tenant      TEXT    NOT NULL,
        audit_seq   INTEGER NOT NULL               -- entry (tenant chain) of the step that set the row
      ) WITHOUT ROWID;

      -- A deadlock (equal rank, different targets) waiting for a named person; no expiry.
      CREATE TABLE arbitration_escalation (
        setpoint    TEXT PRIMARY KEY,
        escalation  TEXT    NOT NULL,              -- the Escalation as JSON (score, requests, reason)
        since       INTEGER NOT NULL,              -- epoch ms
        tenant      TEXT    NOT NULL,
        audit_seq   INTEGER NOT NULL
      ) WITHOUT ROWID;`,
  },
  {
    version: 5,
    name: 'engine: runs, steps, tool-call log, agent calls, genealogy, release approvals',
    up: `
      -- A supervised batch run. State rows change only in the transaction of the audit entry that
      -- records the change (tenant chain); their history is the audit trail and the logs below.
      CREATE TABLE run (
        id           TEXT PRIMARY KEY,             -- run_<token>
        tenant       TEXT    NOT NULL,
        batch        TEXT    NOT NULL,
        line         TEXT    NOT NULL,
        product      TEXT    NOT NULL,
        tooling      TEXT    NOT NULL,
        status       TEXT    NOT NULL CHECK (status IN ('PENDING','RUNNING','APPROVAL','HELD','SUCCEEDED','FAILED','REJECTED','INTERRUPTED')),
        goal         TEXT    NOT NULL,
        request      TEXT    NOT NULL,             -- the parsed run request (JSON)
        limits       TEXT    NOT NULL,             -- effective limits with their source (JSON)
        autonomy     TEXT    NOT NULL CHECK (autonomy IN ('L0','L1','L2','L3')),
        record       TEXT    NOT NULL,             -- the batch record as ingested (JSON)
        record_sha   TEXT    NOT NULL,
        seed         INTEGER NOT NULL,             -- seed of every agent and rehearsal of the run (replay)
        started_by   TEXT    NOT NULL,
        created_at   INTEGER NOT NULL,             -- epoch ms
        updated_at   INTEGER NOT NULL,
        ended_at     INTEGER,
        reason       TEXT,                         -- why HELD / FAILED / INTERRUPTED / REJECTED
        data         TEXT    NOT NULL DEFAULT '{}' -- step results the later steps use (JSON)
      );
      CREATE INDEX run_tenant ON run (tenant, created_at);
      -- one run at a time per line: the partial unique index is the lock (LK_LINE_BUSY)
      CREATE UNIQUE INDEX run_line_active ON run (line) WHERE status IN ('PENDING','RUNNING','APPROVAL','HELD','INTERRUPTED');

      CREATE TABLE run_step (
        run          TEXT    NOT NULL REFERENCES run (id),
        seq          TEXT    NOT NULL,             -- '01'..'10'
        name         TEXT    NOT NULL,
        agent        TEXT    NOT NULL,
        tool         TEXT    NOT NULL,
        gate         INTEGER NOT NULL,
        continuous   INTEGER NOT NULL,
        status       TEXT    NOT NULL CHECK (status IN ('PENDING','RUNNING','SUCCEEDED','FAILED','APPROVAL','REJECTED','HELD','INTERRUPTED','SKIPPED')),
        attempt      INTEGER NOT NULL DEFAULT 0,
        started_at   INTEGER,
        ended_at     INTEGER,
        detail       TEXT    NOT NULL DEFAULT '',
        PRIMARY KEY (run, seq)
      ) WITHOUT ROWID;

      -- The tool-call log of a run: call / ok / error lines with a monotonically increasing id per run.
      -- Written in the transaction of the audit entry of the same call or result; the SSE stream,
      -- the CLI and the console read this one log.
      CREATE TABLE run_tool_call (
        run      TEXT    NOT NULL,
        id       INTEGER NOT NULL,
        at       INTEGER NOT NULL,
        kind     TEXT    NOT NULL CHECK (kind IN ('call','ok','error')),
        step     TEXT    NOT NULL,
        agent    TEXT    NOT NULL,
        tool     TEXT    NOT NULL,
        args     TEXT,                             -- JSON (call)
        summary  TEXT,                             -- one line (ok / error)
        result   TEXT,                             -- JSON (ok / error)
        audit_seq INTEGER NOT NULL,
        PRIMARY KEY (run, id)
      ) WITHOUT ROWID;
      ${appendOnly('run_tool_call')}

      -- Every agent decision: its exact input and output (JSON), so a batch replays against another model.
      CREATE TABLE run_agent_call (
        run      TEXT    NOT NULL,
        id       INTEGER NOT NULL,
        at       INTEGER NOT NULL,
        step     TEXT    NOT NULL,
        agent    TEXT    NOT NULL,
        fn       TEXT    NOT NULL,                 -- agent function name, e.g. compress_fill.decide
        model    TEXT,                             -- <id>@<version> it used
        input    TEXT    NOT NULL,
        output   TEXT    NOT NULL,
        PRIMARY KEY (run, id)
      ) WITHOUT ROWID;
      ${appendOnly('run_agent_call')}

      -- The batch genealogy: time-aligned sensor states, recommendations, actions, equipment responses,
      -- approvals, QC results, arbitration contests.
      CREATE TABLE run_event (
        run      TEXT    NOT NULL,
        id       INTEGER NOT NULL,
        at       INTEGER NOT NULL,
        kind     TEXT    NOT NULL,
        step     TEXT,
        agent    TEXT,
        tag      TEXT,
        summary  TEXT    NOT NULL,
        data     TEXT,
        PRIMARY KEY (run, id)
      ) WITHOUT ROWID;
      ${appendOnly('run_event')}

      -- The approval gate of a run (batch release): pending until a named QA reviewer signs.
      CREATE TABLE run_approval (
        id           TEXT PRIMARY KEY,             -- apr_<token>
        run          TEXT    NOT NULL REFERENCES run (id),
        tenant       TEXT    NOT NULL,
        kind         TEXT    NOT NULL CHECK (kind IN ('batch_release')),
        status       TEXT    NOT NULL CHECK (status IN ('pending','approved','rejected')),
        reviewer     TEXT    NOT NULL,             -- the named QA reviewer the record assigns
        record       TEXT    NOT NULL,             -- canonical JSON of what is signed
        record_hash  TEXT    NOT NULL,             -- SHA-256 of record
        requested_at INTEGER NOT NULL,
        decided_at   INTEGER,
        signature    TEXT                          -- JSON: identity, decision, meaning, timestamp, Ed25519 signature
      );
      CREATE INDEX run_approval_tenant ON run_approval (tenant, status);`,
  },
  {
    version: 6,
    name: 'models: the one model registry (status lifecycle under change control)',
    up: `
      -- One row per model version of a tenant: the one source of truth for its status and site pins. The
      -- artefact stays a file under <dataDir>/models/<tenant>/<id>/artefact.json, checked against sha256 at
      -- every load. Every row change commits with its model_change audit entry (the tenant's chain) in one
      -- transaction; audit_seq names that entry. The status history is the audit trail.
      CREATE TABLE model (
        tenant      TEXT    NOT NULL,
        id          TEXT    NOT NULL,              -- <analyte>-<family>-v<version>
        analyte     TEXT    NOT NULL,
        family      TEXT    NOT NULL,
        version     INTEGER NOT NULL CHECK (version >= 1),
        kind        TEXT    NOT NULL CHECK (kind IN ('twin', 'nir-pls', 'vision-softmax')),
        sha256      TEXT    NOT NULL CHECK (length(sha256) = 64),
        status      TEXT    NOT NULL CHECK (status IN ('draft', 'shadow', 'validated', 'retired')),
        sites       TEXT    NOT NULL,              -- JSON array of site ids the model is pinned to
        card        TEXT    NOT NULL,              -- the model card as JSON (metrics, acceptance criteria, ...)
        created_at  TEXT    NOT NULL,
        created_by  TEXT    NOT NULL,
        changed_at  TEXT    NOT NULL,              -- last status change (= created_at for a fresh draft)
        changed_by  TEXT    NOT NULL,
        change_ref  TEXT,                          -- change reference of the last status change
        audit_seq   INTEGER NOT NULL,              -- model_change entry (tenant chain) of the last row change
        PRIMARY KEY (tenant, id),
        UNIQUE (tenant, analyte, family, version)
      ) WITHOUT ROWID;
      CREATE INDEX model_family ON model (tenant, analyte, family, status, version);
      -- A model version is never deleted (replay needs it), its identity and artefact hash never change, and
      -- retired is final: the code refuses these first; the triggers make sure nothing else can.
      CREATE TRIGGER model_no_delete BEFORE DELETE ON model
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: model versions are never deleted'); END;
      CREATE TRIGGER model_identity BEFORE UPDATE ON model
        WHEN NEW.tenant IS NOT OLD.tenant OR NEW.id IS NOT OLD.id OR NEW.analyte IS NOT OLD.analyte OR NEW.family IS NOT OLD.family
          OR NEW.version IS NOT OLD.version OR NEW.kind IS NOT OLD.kind OR NEW.sha256 IS NOT OLD.sha256 OR NEW.card IS NOT OLD.card
          OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: a model version''s identity, card and artefact hash never change'); END;
      CREATE TRIGGER model_retired_final BEFORE UPDATE ON model
        WHEN OLD.status = 'retired'
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: a retired model stays retired'); END;`,
  },
  {
    version: 7,
    name: 'identity: local users (scrypt password hashes, roles, tenants, lockout)',
    up: `
      -- The local identities of an air-gapped site (21 CFR 11.100, 11.300). Every row change commits with its
      -- audit entry on the site chain (kind identity) in one transaction; audit_seq names the last one. A user
      -- id is never deleted or reused (11.300(a): no two people ever share an identity), so a signature in an
      -- old record always names one person.
      CREATE TABLE app_user (
        id               TEXT PRIMARY KEY,           -- e.g. m.rossi
        name             TEXT    NOT NULL,           -- printed name (signature manifestation, 11.50)
        role             TEXT    NOT NULL CHECK (role IN ('operator','process_engineer','qa_reviewer','auditor','admin')),
        tenants          TEXT    NOT NULL,           -- JSON array of the tenant ids the user works for
        password         TEXT    NOT NULL,           -- scrypt$<log2 N>$<r>$<p>$<salt b64url>$<key b64url>
        disabled         INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
        failed_attempts  INTEGER NOT NULL DEFAULT 0, -- consecutive failed sign-ins and signing re-authentications
        locked_at        TEXT,                       -- set when failed_attempts reached the limit
        created_at       TEXT    NOT NULL,
        created_by       TEXT    NOT NULL,
        changed_at       TEXT    NOT NULL,
        audit_seq        INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TRIGGER app_user_no_delete BEFORE DELETE ON app_user
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: a user id is never deleted or reused; disable it'); END;
      CREATE TRIGGER app_user_identity BEFORE UPDATE ON app_user
        WHEN NEW.id IS NOT OLD.id OR NEW.created_at IS NOT OLD.created_at OR NEW.created_by IS NOT OLD.created_by
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: a user''s identity never changes'); END;`,
  },
  {
    version: 8,
    name: 'mqtt: store-and-forward outbox of Sparkplug B messages, publisher state (bdSeq)',
    up: `
      -- Messages for the plant's broker that could not be sent (broker away), oldest first by ord. Rows are
      -- deleted once the broker acknowledged them, or dropped oldest-first past the configured bound (each drop
      -- audited on the site chain in the same transaction). Not an audit table: it is a queue.
      CREATE TABLE mqtt_outbox (
        ord        INTEGER PRIMARY KEY,          -- enqueue order
        topic      TEXT    NOT NULL,
        message    TEXT    NOT NULL,             -- JSON: { timestamp, metrics: [{ name, type, value, timestamp, ... }] }
        bytes      INTEGER NOT NULL,
        queued_at  INTEGER NOT NULL              -- epoch ms
      );
      -- Small publisher state kept across restarts: the Sparkplug birth/death sequence number (bdSeq).
      CREATE TABLE mqtt_state (
        key   TEXT PRIMARY KEY,
        value INTEGER NOT NULL
      ) WITHOUT ROWID;`,
  },
  {
    version: 9,
    name: 'exceptions: deviations of a run (OOS, OOT, PLC lost, spec failures, ...), open until a named person closes them',
    up: `
      -- One row per deviation a run raised. Raised in the transaction of its audit entry; closed once, by a named
      -- person with a comment (a signature for critical and major ones), in the transaction of that audit entry.
      -- What was raised never changes and a row is never deleted: the release of a batch is judged on this table.
      CREATE TABLE run_exception (
        id          TEXT    PRIMARY KEY,              -- exc_<hex>
        tenant      TEXT    NOT NULL,
        run         TEXT    NOT NULL REFERENCES run (id),
        batch       TEXT    NOT NULL,
        key         TEXT    NOT NULL,                 -- what condition it is (one row per condition and run)
        kind        TEXT    NOT NULL,
        severity    TEXT    NOT NULL CHECK (severity IN ('critical', 'major', 'minor')),
        step        TEXT,
        title       TEXT    NOT NULL,
        evidence    TEXT    NOT NULL,                 -- JSON: values, limits, genealogy references
        raised_at   INTEGER NOT NULL,
        raised_by   TEXT    NOT NULL,
        audit_seq   INTEGER NOT NULL,
        status      TEXT    NOT NULL CHECK (status IN ('open', 'closed')),
        closed_by   TEXT,
        closed_name TEXT,
        closed_at   INTEGER,
        comment     TEXT,
        deviation   TEXT,
        signature   TEXT,                             -- JSON: the Part 11 signature of the closure
        UNIQUE (run, key)
      );
      CREATE INDEX run_exception_run ON run_exception (run, raised_at);
      CREATE INDEX run_exception_open ON run_exception (tenant, status);
      CREATE TRIGGER run_exception_no_delete BEFORE DELETE ON run_exception
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: an exception is closed, never deleted'); END;
      CREATE TRIGGER run_exception_raised BEFORE UPDATE ON run_exception
        WHEN NEW.id IS NOT OLD.id OR NEW.tenant IS NOT OLD.tenant OR NEW.run IS NOT OLD.run OR NEW.batch IS NOT OLD.batch OR NEW.key IS NOT OLD.key
          OR NEW.kind IS NOT OLD.kind OR NEW.severity IS NOT OLD.severity OR NEW.step IS NOT OLD.step OR NEW.title IS NOT OLD.title
          OR NEW.evidence IS NOT OLD.evidence OR NEW.raised_at IS NOT OLD.raised_at OR NEW.raised_by IS NOT OLD.raised_by OR NEW.audit_seq IS NOT OLD.audit_seq
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: what an exception records never changes'); END;
      CREATE TRIGGER run_exception_closed_once BEFORE UPDATE ON run_exception
        WHEN OLD.status = 'closed' OR NEW.status <> 'closed' OR NEW.closed_by IS NULL OR NEW.closed_at IS NULL OR NEW.comment IS NULL
        BEGIN SELECT RAISE(ABORT, 'LK_AUDIT_IMMUTABLE: an exception is closed once, by a named person with a comment'); END;`,
  },
  {
    version: 10,
    name: 'runs: ABORTED runs and steps (a signed abort by a named person), withdrawn approval gates',
    rebuildsReferencedTable: true,
    up: (db) => {
      // the same tables as migration 5, with ABORTED in the run and step statuses and 'withdrawn' for a gate
      // whose run was aborted (it can no longer be signed)
      rebuild(db, 'run', `CREATE TABLE run_new (
        id           TEXT PRIMARY KEY,
        tenant       TEXT    NOT NULL,
        batch        TEXT    NOT NULL,
        line         TEXT    NOT NULL,
        product      TEXT    NOT NULL,
        tooling      TEXT    NOT NULL,
        status       TEXT    NOT NULL CHECK (status IN ('PENDING','RUNNING','APPROVAL','HELD','SUCCEEDED','FAILED','REJECTED','INTERRUPTED','ABORTED')),
        goal         TEXT    NOT NULL,
        request      TEXT    NOT NULL,
        limits       TEXT    NOT NULL,
        autonomy     TEXT    NOT NULL CHECK (autonomy IN ('L0','L1','L2','L3')),
        record       TEXT    NOT NULL,
        record_sha   TEXT    NOT NULL,
        seed         INTEGER NOT NULL,
        started_by   TEXT    NOT NULL,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        ended_at     INTEGER,
        reason       TEXT,                         -- why HELD / FAILED / INTERRUPTED / REJECTED / ABORTED
        data         TEXT    NOT NULL DEFAULT '{}'
      )`, `CREATE INDEX run_tenant ON run (tenant, created_at);
        CREATE UNIQUE INDEX run_line_active ON run (line) WHERE status IN ('PENDING','RUNNING','APPROVAL','HELD','INTERRUPTED');`);
      rebuild(db, 'run_step', `CREATE TABLE run_step_new (
        run          TEXT    NOT NULL REFERENCES run (id),
        seq          TEXT    NOT NULL,
        name         TEXT    NOT NULL,
        agent        TEXT    NOT NULL,
        tool         TEXT    NOT NULL,
        gate         INTEGER NOT NULL,
        continuous   INTEGER NOT NULL,
        status       TEXT    NOT NULL CHECK (status IN ('PENDING','RUNNING','SUCCEEDED','FAILED','APPROVAL','REJECTED','HELD','INTERRUPTED','SKIPPED','ABORTED')),
        attempt      INTEGER NOT NULL DEFAULT 0,
        started_at   INTEGER,
        ended_at     INTEGER,
        detail       TEXT    NOT NULL DEFAULT '',
        PRIMARY KEY (run, seq)
      ) WITHOUT ROWID`, '');
      rebuild(db, 'run_approval', `CREATE TABLE run_approval_new (
        id           TEXT PRIMARY KEY,
        run          TEXT    NOT NULL REFERENCES run (id),
        tenant       TEXT    NOT NULL,
        kind         TEXT    NOT NULL CHECK (kind IN ('batch_release')),
        status       TEXT    NOT NULL CHECK (status IN ('pending','approved','rejected','withdrawn')),
        reviewer     TEXT    NOT NULL,             -- the named QA reviewer (the record's, or who it was reassigned to)
        record       TEXT    NOT NULL,
        record_hash  TEXT    NOT NULL,
        requested_at INTEGER NOT NULL,
        decided_at   INTEGER,
        signature    TEXT
      )`, 'CREATE INDEX run_approval_tenant ON run_approval (tenant, status);');
    },
  },
  {
    version: 11,
    name: 'autonomy: levels per tenant (a change under one tenant\'s path applies to that tenant\'s runs only)',
    up: `
      -- The levels of migration 3, keyed by tenant. A change is made under a tenant's path and audited on that
      -- tenant's chain; it governs that tenant's runs only. Rows from before levels were per tenant keep
      -- tenant '*' (their entry is on the site chain): they still apply to every tenant without a row of its own
      -- for the same (agent, setpoint), so the upgrade changes no level in force.
      CREATE TABLE autonomy_level_new (
        tenant       TEXT NOT NULL,
        agent        TEXT NOT NULL,
        setpoint     TEXT NOT NULL,
        level        TEXT NOT NULL CHECK (level IN ('L0', 'L1', 'L2', 'L3')),
        changed_by   TEXT NOT NULL,
        role         TEXT,
        change_ref   TEXT,
        reason       TEXT,
        changed_at   TEXT NOT NULL,
        bundle       TEXT NOT NULL,
        audit_seq    INTEGER NOT NULL,             -- autonomy_change entry on the tenant's chain ('*': the site chain)
        PRIMARY KEY (tenant, agent, setpoint),
        CHECK (agent <> '*' OR setpoint <> '*')
      ) WITHOUT ROWID;
      INSERT INTO autonomy_level_new (tenant, agent, setpoint, level, changed_by, role, change_ref, reason, changed_at, bundle, audit_seq)
        SELECT '*', agent, setpoint, level, changed_by, role, change_ref, reason, changed_at, bundle, audit_seq FROM autonomy_level;
      DROP TABLE autonomy_level;
      ALTER TABLE autonomy_level_new RENAME TO autonomy_level;`,
  },
  {
    version: 12,
    name: 'identity: passwords set by another are changed at first use, password age and history, lock-out per account and source',
    up: `
      -- must_change: the password was set by someone other than its owner (an administrator, the demo set-up) or
      -- has to be renewed; until it is, the account may change its password and nothing else, and signs nothing.
      ALTER TABLE app_user ADD COLUMN must_change INTEGER NOT NULL DEFAULT 0 CHECK (must_change IN (0, 1));
      -- when the current password was set (NULL: at created_at), for the policy's maximum age
      ALTER TABLE app_user ADD COLUMN password_set_at TEXT;
      -- JSON array of the previous password hashes (newest first), as many as the policy's history keeps
      ALTER TABLE app_user ADD COLUMN password_history TEXT NOT NULL DEFAULT '[]';
      -- failed passwords per account and source (client address, or 'local' for the offline CLI): a wait that
      -- doubles per failure, for that pair only; a success or an administrator clears it
      CREATE TABLE auth_lockout (
        user          TEXT    NOT NULL,
        source        TEXT    NOT NULL,
        failures      INTEGER NOT NULL,
        blocked_until INTEGER NOT NULL DEFAULT 0,  -- epoch ms
        last_at       INTEGER NOT NULL,            -- epoch ms
        PRIMARY KEY (user, source)
      ) WITHOUT ROWID;`,
  },
  {
    version: 13,
    name: 'identity: signed-in sessions kept across a restart (token hashes only), their expiry, maximum age and revocation',
    up: `
      -- A local user's session (src/api/sessions.ts): a restarted daemon accepts a token that is still valid, and a
      -- session ended by sign-out, a disabled or locked account or a new password set by another stays ended.
      -- Rows go once expired (swept in bounded batches); a revoked one stays until its expiry.
      CREATE TABLE auth_session (
        id          TEXT    PRIMARY KEY,                    -- ses_<hex>
        user        TEXT    NOT NULL,
        started_at  INTEGER NOT NULL,                       -- epoch ms
        expires_at  INTEGER NOT NULL,                       -- the current token's expiry, epoch ms (renewal moves it)
        max_until   INTEGER NOT NULL,                       -- no renewal past it: started_at + the maximum session age
        revoked     INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
      ) WITHOUT ROWID;
      CREATE INDEX auth_session_user ON auth_session (user);
      CREATE INDEX auth_session_expiry ON auth_session (expires_at);
      -- Tokens are credentials (21 CFR 11.300): the SHA-256 of each bearer token, never the token itself.
      CREATE TABLE auth_session_token (
        hash        TEXT    PRIMARY KEY CHECK (length(hash) = 64),
        session     TEXT    NOT NULL REFERENCES auth_session (id),
        expires_at  INTEGER NOT NULL                        -- this token's own expiry, epoch ms
      ) WITHOUT ROWID;
      CREATE INDEX auth_session_token_session ON auth_session_token (session);
      CREATE INDEX auth_session_token_expiry ON auth_session_token (expires_at);`,
  },
  {
    version: 14,
    name: 'audit: each entry stored as its hashed bytes, the columns generated from them',
    up: `
      -- An entry's record is the exact text its hash covers: its RFC 8785 canonical JSON (docs/audit.md). Every
      -- other column is generated from that text by SQLite, so no column can say anything the hashed record does
      -- not, and \`audit verify\` reads one value per entry and hashes it. tenant and seq stay stored: they are the
      -- chain position, which verify checks against the record's own. Every other column is VIRTUAL — computed from
      -- the record when read, never stored beside it, so no byte of the file can say what the record does not (the
      -- indexes hold their own copies, as any index does) — and declared without a type: \`PRAGMA quick_check\`
      -- checks a typed column's values against its type, which for a VIRTUAL column means computing it from the
      -- record, six times the cost of the whole check otherwise. (A comparison of an untyped column with an
      -- INTEGER one applies the integer's affinity to it and loses its index: join on \`+seq\`.)
      -- A body must be JSON: every write computes the indexed columns from it, so no SQL write can store another text.
      -- A rowid table, unlike migration 1's WITHOUT ROWID: SQLite's planner does not use an index on a generated
      -- column of a WITHOUT ROWID table (every query by run, batch, intent... would read the whole chain); rows are
      -- appended in seq order, so a walk by (tenant, seq) still reads the table's pages in order. \`audit verify\`
      -- compares this table's schema with the one these migrations make (a changed generation expression would
      -- otherwise show a column the record does not hold).
      CREATE TABLE audit_entry_new (
        tenant     TEXT    NOT NULL,
        seq        INTEGER NOT NULL,
        body       TEXT    NOT NULL,
        hash       TEXT    NOT NULL,
        ts                 GENERATED ALWAYS AS (body ->> '$.ts') VIRTUAL,
        actor              GENERATED ALWAYS AS (body ->> '$.actor') VIRTUAL,
        kind               GENERATED ALWAYS AS (body ->> '$.kind') VIRTUAL,
        action             GENERATED ALWAYS AS (body ->> '$.action') VIRTUAL,
        run                GENERATED ALWAYS AS (body ->> '$.subject.run') VIRTUAL,
        batch              GENERATED ALWAYS AS (body ->> '$.subject.batch') VIRTUAL,
        agent              GENERATED ALWAYS AS (body ->> '$.subject.agent') VIRTUAL,
        tool               GENERATED ALWAYS AS (body ->> '$.subject.tool') VIRTUAL,
        setpoint           GENERATED ALWAYS AS (body ->> '$.subject.setpoint') VIRTUAL,
        reviewer           GENERATED ALWAYS AS (body ->> '$.subject.reviewer') VIRTUAL,
        args               GENERATED ALWAYS AS (body -> '$.args') VIRTUAL,
        result             GENERATED ALWAYS AS (body -> '$.result') VIRTUAL,
        reason             GENERATED ALWAYS AS (body ->> '$.reason') VIRTUAL,
        old_value          GENERATED ALWAYS AS (body -> '$.old') VIRTUAL,
        new_value          GENERATED ALWAYS AS (body -> '$.new') VIRTUAL,
        intent             GENERATED ALWAYS AS (body ->> '$.intent') VIRTUAL,
        signature          GENERATED ALWAYS AS (body -> '$.signature') VIRTUAL,
        prev_hash          GENERATED ALWAYS AS (body ->> '$.prev_hash') VIRTUAL,
        PRIMARY KEY (tenant, seq)
      );
      -- a record SQLite's JSON functions cannot read (a damaged column nested deeper than they go) is kept as unreadable
      -- too: the indexed columns are computed from every record, and one such row must not make the upgrade impossible
      INSERT INTO audit_entry_new (tenant, seq, body, hash)
        SELECT tenant, seq, CASE WHEN json_valid(r) THEN r ELSE ${V13_UNREADABLE} END, hash
        FROM (SELECT *, ${V13_BODY} AS r FROM audit_entry) ORDER BY tenant, seq;
      DROP TABLE audit_entry;
      ALTER TABLE audit_entry_new RENAME TO audit_entry;
      -- migration 1's indexes and triggers, restated: DROP TABLE took them with the old table (and a shipped
      -- migration's text is never shared with a later one, which could then change it)
      CREATE INDEX audit_entry_run      ON audit_entry (tenant, run, seq)      WHERE run IS NOT NULL;
      CREATE INDEX audit_entry_batch    ON audit_entry (tenant, batch, seq)    WHERE batch IS NOT NULL;
      CREATE INDEX audit_entry_agent    ON audit_entry (tenant, agent, seq)    WHERE agent IS NOT NULL;
      CREATE INDEX audit_entry_tool     ON audit_entry (tenant, tool, seq)     WHERE tool IS NOT NULL;
      CREATE INDEX audit_entry_reviewer ON audit_entry (tenant, reviewer, seq) WHERE reviewer IS NOT NULL;
      CREATE INDEX audit_entry_intent   ON audit_entry (tenant, intent)        WHERE intent IS NOT NULL;
      CREATE INDEX audit_entry_ts       ON audit_entry (tenant, ts);
      CREATE INDEX audit_entry_intents  ON audit_entry (tenant, seq)         WHERE kind = 'intent';
      ${appendOnly('audit_entry')}`,
  },
];

/** Highest applied migration version (0 for a fresh database). */
export function currentVersion(db: Database): number {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migration').get() as { v: number | null } | undefined;
  return row?.v ?? 0;
}

/**
 * Bring `db` up to the newest version in `migrations`. Each migration is its
 * own IMMEDIATE transaction together with its `schema_migration` row.
 *
 * @throws LkError LK_STORE_MIGRATION when a migration fails (the database stays at the previous version),
 *   when the list is not 1..n without gaps, or when the database is newer than this software
 *   (running old code on it would misread tables it does not know).
 */
export function runMigrations(db: Database, now: () => string, migrations: readonly Migration[] = MIGRATIONS): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new LkError('LK_STORE_MIGRATION', `migration list is out of order at index ${i} (version ${m.version})`);
  });
  db.exec('CREATE TABLE IF NOT EXISTS schema_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  const have = currentVersion(db);
  if (have > migrations.length) {
    throw new LkError('LK_STORE_MIGRATION', `database schema version ${have} is newer than this linekeeper (${migrations.length})`, { have, known: migrations.length });
  }
  const record = db.prepare('INSERT INTO schema_migration (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of migrations.slice(have)) {
    const apply = db.transaction(() => {
      if (typeof m.up === 'string') db.exec(m.up);
      else m.up(db);
      if (m.rebuildsReferencedTable) {
        const broken = db.pragma('foreign_key_check') as unknown[];
        if (broken.length > 0) throw new Error(`${broken.length} rows no longer reference an existing row`);
      }
      record.run(m.version, m.name, now());
    });
    const fk = m.rebuildsReferencedTable ? (db.pragma('foreign_keys', { simple: true }) as number) : 0;
    if (fk) db.pragma('foreign_keys = OFF');
    try {
      apply.immediate();
    } catch (err) {
      throw new LkError('LK_STORE_MIGRATION', `migration ${m.version} (${m.name}) failed: ${(err as Error).message}`, { version: m.version }, { cause: err });
    } finally {
      if (fk) db.pragma('foreign_keys = ON');
    }
  }
  return migrations.length;
}
