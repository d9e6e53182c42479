/**
 * README.txt of an archive: what each file is and the exact commands that verify it with plain Node (or only
 * `sha256sum`), for a reader years from now who has neither linekeeper nor its documentation. Plain ASCII-safe
 * text, no path of the machine that wrote it.
 */
import type { ArchivedRun, ArchiveScope } from './archive.js';
import { ARCHIVE_BUNDLE_FILE, ARCHIVE_KEY_FILE, ARCHIVE_META_FILE, MANIFEST_FILE, MANIFEST_SIG_FILE, VERIFIER_FILE } from './archive-manifest.js';

export interface ReadmeInput {
  readonly tenant: string;
  readonly scope: ArchiveScope;
  readonly runs: readonly ArchivedRun[];
  /** The per-run documents the archive holds (beside each release package). */
  readonly documents: readonly { readonly path: string; readonly what: string }[];
  readonly keyId: string;
  readonly retentionYears: number;
  readonly createdAt: string;
}

const row = (name: string, what: string): string => `  ${name.padEnd(38)} ${what}`;

export function archiveReadme(r: ReadmeInput): string {
  const what = 'run' in r.scope ? `run ${r.scope.run}${r.runs[0] ? ` (batch ${r.runs[0].batch})` : ''}` : `the period ${r.scope.from} to ${r.scope.to} (to excluded; a date alone is its whole UTC day)`;
  const withRelease = r.runs.some((x) => x.release !== null);
  return [
    `linekeeper archive: tenant ${r.tenant}, ${what}`,
    `Written ${r.createdAt} (UTC). Keep it for the retention period: ${r.retentionYears} years from the end of`,
    `each run (the dates are in ${ARCHIVE_META_FILE}, "retain_until" and "retention").`,
    '',
    'This folder is self-contained. Every file reads with ordinary tools (a text editor, a PDF reader, a',
    'spreadsheet), and the whole folder is verified with Node.js 18 or later alone: no linekeeper, no npm',
    'packages, no network.',
    '',
    'FILES',
    row('README.txt', 'this text'),
    row(ARCHIVE_META_FILE, 'what was archived: tenant, runs, the audit bundle\'s head, retention, who wrote it'),
    row(ARCHIVE_BUNDLE_FILE, `the tenant's audit trail of the ${'run' in r.scope ? 'run' : 'period'} (JSON Lines): a signed header, the site's`),
    row('', 'signed checkpoints, then every entry with its hash; entries marked in_filter are the'),
    row('', `${'run' in r.scope ? 'run\'s' : 'period\'s'}, the others complete the hash chain up to a signed checkpoint`),
    row(ARCHIVE_KEY_FILE, `the site's Ed25519 public key (key id ${r.keyId})`),
    row(VERIFIER_FILE, 'the standalone verifier: one file of plain JavaScript, Node\'s own modules only'),
    row(MANIFEST_FILE, 'the SHA-256 of every other file (the format of sha256sum)'),
    row(MANIFEST_SIG_FILE, `the site key's Ed25519 signature of ${MANIFEST_FILE}`),
    ...(withRelease
      ? [
          row('runs/<run>/release/release.pdf', 'the batch release report (PDF/A-2b), byte for byte as the run wrote it'),
          row('runs/<run>/release/release.json', 'the release record (RFC 8785 canonical JSON); release.pdf prints its SHA-256'),
          row(`runs/<run>/release/${ARCHIVE_BUNDLE_FILE}`, 'the audit bundle sealed in the release package (release.json names its SHA-256)'),
        ]
      : []),
    ...r.documents.map((d) => row(`runs/<run>/${d.path}`, d.what)),
    '',
    `RUNS (${r.runs.length})`,
    ...(r.runs.length === 0 ? ['  none'] : r.runs.map((x) => `  ${x.run}  batch ${x.batch}  ${x.status}  ${x.started_at} .. ${x.ended_at}  release package: ${x.release ? 'yes' : 'none on the node'}  keep until ${x.retain_until}`)),
    '',
    'VERIFY (in this folder)',
    '  1. Everything, with the site\'s public key as you hold it apart from this archive:',
    `       node ${VERIFIER_FILE} --archive . --key SITE-PUBLIC-KEY.pem`,
    '     It checks every file against the manifest (none changed, missing or added), the manifest\'s',
    '     signature, every audit bundle (hash chain and signed checkpoints), and each release.json against',
    '     the bundle beside it. Exit 0: intact. 65: damaged (each damaged file is named). 1: a key problem',
    '     (the archive was signed by another key). 2: not an archive.',
    `     Without --key the archive's own ${ARCHIVE_KEY_FILE} is used: that shows the archive is whole, not`,
    '     that the site made it.',
    `  2. The files against the manifest only, without Node:   sha256sum -c ${MANIFEST_FILE}`,
    `  3. One audit bundle:   node ${VERIFIER_FILE} ${ARCHIVE_BUNDLE_FILE} --key SITE-PUBLIC-KEY.pem`,
    '',
    'The audit bundle\'s format, what each kind of damage means and what the verifier checks are described',
    'in linekeeper\'s documentation (docs/audit.md, "Archiving and retention").',
    '',
  ].join('\n');
}
