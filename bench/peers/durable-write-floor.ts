/**
 * The floor of a durable supervised setpoint write, written the way a careful
 * engineer would with the raw libraries and nothing else: node-opcua for the
 * equipment, better-sqlite3 for the journal, on the same kind of SQLite file
 * as linekeeper's store (WAL, synchronous=FULL, a row per journal entry).
 *
 *   read the current setpoints (one Read of the same nodes the guard reads:
 *     the policy's step check and the capping risk need the true values)
 *   → commit the intent row                       (durable before the write)
 *   → Write the setpoint → Read it back and compare
 *   → commit the outcome row                      (durable after the read-back)
 *
 * The rows carry a JSON body of the byte size linekeeper's rows have in the
 * same run (the bench measures them), so the commits move as many bytes. No
 * policy, no hash chain, no validation: what is left is the I/O a durable,
 * verified write cannot do without. `withRead: false` is the narrower
 * floor (write, read-back and the two commits only).
 */
import Database from 'better-sqlite3';
import { AttributeIds, DataType, type ClientSession } from 'node-opcua';

export interface FloorOptions {
  readonly session: ClientSession;
  /** The node written and read back. */
  readonly nodeId: string;
  /** The nodes read before the write (the current setpoints the guard reads). */
  readonly currentNodeIds: readonly string[];
  /** The journal's SQLite file (created). */
  readonly file: string;
  /** Bytes of the intent row's body and of the outcome row's body. */
  readonly intentBytes: number;
  readonly outcomeBytes: number;
}

export interface DurableWriteFloor {
  /** One durable supervised write of `value`; throws when the equipment refuses it or reads back another value. */
  write(value: number, withRead?: boolean): Promise<void>;
  /** The journal (for counting the pages its commits write). */
  readonly db: Database.Database;
  close(): void;
}

export function durableWriteFloor(o: FloorOptions): DurableWriteFloor {
  const db = new Database(o.file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, intent INTEGER, body TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO journal (intent, body) VALUES (?, ?)');
  const pad = (s: string, n: number): string => (s.length >= n ? s : s + ' '.repeat(n - s.length));
  const reads = o.currentNodeIds.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value }));
  return {
    db,
    async write(value: number, withRead = true): Promise<void> {
      let old: unknown = null;
      if (withRead) {
        const cur = await o.session.read(reads);
        if (!cur.every((dv) => dv.statusCode.isGood())) throw new Error('current value unknown');
        old = cur[0]!.value.value;
      }
      // each statement outside a transaction is its own commit: at synchronous=FULL, durable when run returns
      const intent = insert.run(null, pad(JSON.stringify({ node: o.nodeId, old, new: value }), o.intentBytes)).lastInsertRowid;
      const st = await o.session.write({ nodeId: o.nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value } } });
      if (!st.isGood()) throw new Error(`write refused: ${st.name}`);
      const dv = await o.session.read({ nodeId: o.nodeId, attributeId: AttributeIds.Value });
      const back = dv.value.value as number;
      if (!dv.statusCode.isGood() || Math.abs(back - value) > 1e-9) throw new Error(`read-back ${String(back)} differs from ${value}`);
      insert.run(intent, pad(JSON.stringify({ status: st.name, readBack: back }), o.outcomeBytes));
    },
    close(): void {
      db.close();
    },
  };
}
