/**
 * The append-only triggers of the schema, as the migrations create them.
 * Anyone with the database file can drop them; the hash chains still show an
 * edited audit entry, but the other append-only tables (policy acceptances,
 * tool-call log, model versions, users) rely on the triggers alone. So a
 * writable open re-creates missing ones from the migration text (and the
 * store records that on the site chain), and a read-only open reports them.
 */
import type { Database } from 'better-sqlite3';
import type { Migration } from './migrations.js';

/** `CREATE TRIGGER name ... END;` statements of the SQL migrations, by trigger name, in schema order. */
export function schemaTriggers(migrations: readonly Migration[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of migrations) {
    if (typeof m.up !== 'string') continue;
    // a trigger body here is one statement ending in "; END;" — no nested END in the shipped schema
    for (const match of m.up.matchAll(/CREATE TRIGGER\s+(\w+)[\s\S]*?\bEND;/g)) out.set(match[1]!, match[0]);
  }
  return out;
}

/** Names of the schema's triggers (up to the migrations given) that the database does not have. */
export function missingTriggers(db: Database, migrations: readonly Migration[]): string[] {
  const have = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all() as string[]);
  return [...schemaTriggers(migrations).keys()].filter((n) => !have.has(n));
}

/** Re-create missing triggers in one transaction; returns their names (empty when none was missing). */
export function restoreTriggers(db: Database, migrations: readonly Migration[]): string[] {
  const missing = missingTriggers(db, migrations);
  if (missing.length === 0) return [];
  const sql = schemaTriggers(migrations);
  db.transaction(() => {
    for (const n of missing) db.exec(sql.get(n)!);
  }).immediate();
  return missing;
}
