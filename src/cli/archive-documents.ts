/**
 * A run's documents in an archive, besides its release package: the same renderings the CLI prints offline
 * (`runs exceptions --json` and its text, `runs show --format genealogy`), so what an auditor reads in the archive is
 * what a person read on the node, plus the record itself as JSON and the specification table as CSV.
 */
import { exceptionList } from '../api/routes-exceptions.js';
import { csvCell } from '../audit/export-csv.js';
import type { ArchiveDocument } from '../ops/archive.js';
import { ExceptionStore } from '../store/exception-store.js';
import { RunStore, type RunRecord } from '../store/run-store.js';
import type { Store } from '../store/store.js';
import { formatExceptions } from './commands/exceptions.js';
import { formatGenealogy, offlineGenealogy } from './run-format.js';

interface SpecRow { id?: unknown; title?: unknown; source?: unknown; limits?: unknown; verdict?: unknown; reason?: unknown; data?: { n?: unknown; mean?: unknown; min?: unknown; max?: unknown; unit?: unknown } }

const CSV_COLUMNS = ['specification', 'title', 'verdict', 'limits', 'n', 'mean', 'min', 'max', 'unit', 'source', 'reason'];

const cell = (v: unknown): string => csvCell(typeof v === 'number' || typeof v === 'string' ? v : undefined);

/** The specification table as CSV (RFC 4180, UTF-8, CRLF; cells a spreadsheet would run as formulas are quoted as text). */
export function specTableCsv(table: unknown): string {
  const rows = ((table as { results?: SpecRow[] } | null)?.results ?? []).map((r) => {
    const d = r.data ?? {};
    return [r.id, r.title, r.verdict, r.limits, d.n, d.mean, d.min, d.max, d.unit, r.source, r.reason].map(cell).join(',');
  });
  return `${[CSV_COLUMNS.join(','), ...rows].join('\r\n')}\r\n`;
}

/**
 * The documents of each archived run, read from `store` (read-only reads). Every text document prints its times on
 * the site's clock `tz` (the site's `site.timezone`), as the commands it copies do on that node; the JSON keeps UTC.
 */
export function runDocuments(store: Store, tz?: string): (run: RunRecord) => ArchiveDocument[] {
  const runs = new RunStore(store.db);
  const exceptions = store.schemaVersion >= 9 ? new ExceptionStore(store) : null;
  return (run) => {
    const list = exceptionList(run, exceptions ? exceptions.ofRun(run.id) : []);
    const events = runs.events(run.id);
    const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;
    return [
      { path: 'run.json', bytes: json({ run, steps: runs.steps(run.id), approval: runs.approvalOfRun(run.id), genealogy: events }), what: 'the run as stored: batch record, request, limits, steps, the release gate and its signature, the genealogy events' },
      { path: 'spec-table.json', bytes: json(list), what: 'the specification table (each specification, its data and PASS, FAIL or NOT_EVALUATED) and the run\'s exceptions' },
      { path: 'spec-table.csv', bytes: specTableCsv(list.specTable), what: 'the specification table for a spreadsheet' },
      { path: 'spec-table.txt', bytes: `${formatExceptions(list, tz)}\n`, what: 'the specification table and the exceptions as text (as `linekeeper runs exceptions` prints them)' },
      { path: 'genealogy.txt', bytes: `${formatGenealogy(offlineGenealogy(run, events), tz)}\n`, what: 'the time-aligned batch genealogy as text' },
    ];
  };
}
