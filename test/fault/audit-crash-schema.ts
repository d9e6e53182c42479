/**
 * The schema the crash tests run with: linekeeper's migrations plus one state
 * table, so every "state change + audit entry" transaction can be checked for
 * atomicity after a SIGKILL (both present or both absent).
 */
import { MIGRATIONS, type Migration } from '../../src/store/migrations.js';

export const CRASH_TENANT = 'acme-pharma';

export const CRASH_MIGRATIONS: readonly Migration[] = [
  ...MIGRATIONS,
  { version: MIGRATIONS.length + 1, name: 'crash test state', up: 'CREATE TABLE crash_state (seq INTEGER PRIMARY KEY, value REAL NOT NULL)' },
];
