/**
 * The floor of a durable supervised setpoint write that also keeps the audit
 * trail a GMP line must keep, written with the raw libraries and nothing else:
 * the durable write of durable-write-floor.ts (read the current setpoints,
 * commit the intent, Write, Read back, commit the outcome), where the commits
 * carry the records 21 CFR Part 11 asks of such a write — the decision, the
 * intent and the outcome, each a JSON record chained to its predecessor by
 * SHA-256 — into a table a reviewer can query by batch, agent, tool, run,
 * reviewer, time and open intent, i.e. with the secondary indexes those
 * queries need.
 *
 * It is the I/O linekeeper's guarded write cannot do without: each index is a
 * B-tree whose page the commit writes to the WAL and fsyncs, so a commit of
 * these records moves several pages where the bare floor moves one. No
 * policy, no validation, no canonical JSON (JSON.stringify of a fixed
 * shape), no signing, the chain head kept in memory (one writer): what is
 * left is the bytes and pages a durable, reviewable audited write must
 * commit, at the byte size of linekeeper's records in the same run.
 */
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { AttributeIds, DataType, type ClientSession } from 'node-opcua';

export interface AuditedFloorOptions {
  readonly session: ClientSession;
  /** The node written and read back. */
  readonly nodeId: string;
  /** The nodes read before the write (the current setpoints the guard reads). */
  readonly currentNodeIds: readonly string[];
  /** The journal's SQLite file (created). */
  readonly file: string;
  /** Bytes of the decision, intent and outcome records (linekeeper's, measured in the same run). */
  readonly decisionBytes: number;
  readonly intentBytes: number;
  readonly outcomeBytes: number;
}

export interface AuditedWriteFloor {
  /** One audited durable write of `value`; throws when the equipment refuses it or reads back another value. */
  write(value: number): Promise<void>;
  /** The journal (for counting the pages its commits write). */
  readonly db: Database.Database;
  close(): void;
}

const SUBJECT = { batch: 'B-BENCH', agent: 'agent.compress_fill', tool: 'propose_setpoints' };

export function auditedWriteFloor(o: AuditedFloorOptions): AuditedWriteFloor {
  const db = new Database(o.file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS audit (
      tenant TEXT NOT NULL, seq INTEGER NOT NULL, ts TEXT NOT NULL, kind TEXT NOT NULL, run TEXT, batch TEXT, agent TEXT, tool TEXT,
      setpoint TEXT, reviewer TEXT, intent INTEGER, body TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (tenant, seq));
    CREATE INDEX IF NOT EXISTS audit_run      ON audit (tenant, run, seq)      WHERE run IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_batch    ON audit (tenant, batch, seq)    WHERE batch IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_agent    ON audit (tenant, agent, seq)    WHERE agent IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_tool     ON audit (tenant, tool, seq)     WHERE tool IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_reviewer ON audit (tenant, reviewer, seq) WHERE reviewer IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_intent   ON audit (tenant, intent)        WHERE intent IS NOT NULL;
    CREATE INDEX IF NOT EXISTS audit_ts       ON audit (tenant, ts);
    CREATE INDEX IF NOT EXISTS audit_intents  ON audit (tenant, seq)         WHERE kind = 'intent';`);
  const insert = db.prepare('INSERT INTO audit (tenant, seq, ts, kind, batch, agent, tool, setpoint, intent, body, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  let seq = 0;
  let prev = '0'.repeat(64);
  const pad = (s: string, n: number): string => (s.length >= n ? s : `${s.slice(0, -1)},"pad":"${' '.repeat(Math.max(0, n - s.length - 9))}"}`);
  const record = (kind: string, bytes: number, fields: Record<string, unknown>, intent: number | null): number => {
    const ts = new Date().toISOString();
    const setpoint = o.nodeId;
    const subject = kind === 'outcome' ? { setpoint } : { ...SUBJECT, setpoint };
    const body = pad(JSON.stringify({ tenant: 'acme-pharma', seq: ++seq, ts, kind, subject, ...fields, intent, prev_hash: prev }), bytes);
    const hash = createHash('sha256').update(body).digest('hex');
    insert.run('acme-pharma', seq, ts, kind, kind === 'outcome' ? null : SUBJECT.batch, kind === 'outcome' ? null : SUBJECT.agent, kind === 'outcome' ? null : SUBJECT.tool, setpoint, intent, body, hash);
    prev = hash;
    return seq;
  };
  const reads = o.currentNodeIds.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value }));
  const commitIntent = db.transaction((old: unknown, value: number): number => {
    record('decision', o.decisionBytes, { decision: 'allow', old, new: value }, null);
    return record('intent', o.intentBytes, { old, new: value }, null);
  });
  const commitOutcome = db.transaction((intent: number, status: string, back: number): void => {
    record('outcome', o.outcomeBytes, { status, readBack: back }, intent);
  });
  return {
    async write(value: number): Promise<void> {
      const cur = await o.session.read(reads);
      if (!cur.every((dv) => dv.statusCode.isGood())) throw new Error('current value unknown');
      const intent = commitIntent(cur[0]!.value.value, value);
      const st = await o.session.write({ nodeId: o.nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value } } });
      if (!st.isGood()) throw new Error(`write refused: ${st.name}`);
      const dv = await o.session.read({ nodeId: o.nodeId, attributeId: AttributeIds.Value });
      const back = dv.value.value as number;
      if (!dv.statusCode.isGood() || Math.abs(back - value) > 1e-9) throw new Error(`read-back ${String(back)} differs from ${value}`);
      commitOutcome(intent, st.name, back);
    },
    db,
    close(): void {
      db.close();
    },
  };
}
