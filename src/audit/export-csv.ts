/**
 * CSV export of one tenant's entries (RFC 4180, UTF-8, CRLF) for spreadsheets.
 * Not verifiable on its own: the bundle is the evidence, CSV is for reading.
 * A text cell that a spreadsheet would run as a formula (=, +, -, @, tab, CR at
 * its start, and not a plain number) is prefixed with an apostrophe (OWASP CSV
 * injection guidance).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { Database } from 'better-sqlite3';
import { canonicalJson, type AuditEntry, type Json } from './entry.js';
import { iterateAudit } from './query.js';

export const CSV_COLUMNS = [
  'tenant', 'seq', 'ts', 'actor', 'kind', 'action', 'run', 'batch', 'agent', 'tool', 'setpoint', 'reviewer',
  'args', 'result', 'reason', 'old', 'new', 'intent', 'signed_by', 'signer_name', 'signature_meaning', 'signed_at', 'prev_hash', 'hash',
] as const;

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

export function csvCell(v: string | number | undefined): string {
  if (v === undefined) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !NUMBER.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

const json = (v: Json | undefined): string | undefined => (v === undefined ? undefined : canonicalJson(v));

export function csvRow(e: AuditEntry): string {
  const s = e.subject;
  const sig = e.signature;
  return [
    e.tenant, e.seq, e.ts, e.actor, e.kind, e.action, s.run, s.batch, s.agent, s.tool, s.setpoint, s.reviewer,
    json(e.args), json(e.result), e.reason, json(e.old), json(e.new), e.intent, sig?.user, sig?.name, sig?.meaning, sig?.time, e.prev_hash, e.hash,
  ].map(csvCell).join(',');
}

/**
 * Write `tenant`'s entries matching `filter` as CSV to `file`; returns the number of entries.
 * @throws LkError LK_VALIDATION for a bad filter.
 */
export function exportCsv(db: Database, tenant: string, filter: unknown, file: string): number {
  const fd = openSync(file, 'w', 0o644);
  let n = 0;
  let buf = `${CSV_COLUMNS.join(',')}\r\n`;
  try {
    for (const e of iterateAudit(db, tenant, filter)) {
      buf += `${csvRow(e)}\r\n`;
      n++;
      if (buf.length > 65536) {
        writeSync(fd, buf);
        buf = '';
      }
    }
    writeSync(fd, buf);
  } finally {
    closeSync(fd);
  }
  return n;
}
