/**
 * Wrong paths and hostile YAML on the command line: each is an `LK_*` code and its documented exit code
 * (docs/cli.md), never a raw Node error with a stack trace. In-process (runCli), on real files in a temp dir.
 */
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHECKPOINT_LOG_BYTES, checkpointLogFile, readCheckpointLog } from '../../src/audit/checkpoints.js';
import { exitCodeFor } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { fileError } from '../../src/files.js';
import { openStore } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { SITE_TENANT } from '../../src/audit/entry.js';
import { queryAudit } from '../../src/audit/query.js';
import { openPolicy } from '../../src/engine/policy-gate.js';
import { silentLogger } from '../../src/log.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let dir: string;
let data: string;

/** Nine levels of nine aliases: 9^9 nodes once expanded (the "billion laughs"). */
const ALIAS_BOMB = ['a: &a [x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 8 }, (_, i) => {
  const p = String.fromCharCode(97 + i);
  const n = String.fromCharCode(98 + i);
  return `${n}: &${n} [${Array(9).fill(`*${p}`).join(', ')}]`;
})].join('\n');

const noStack = (err: string): void => {
  expect(err).not.toMatch(/\n\s+at /);
  expect(err).toMatch(/^linekeeper: .*\[LK_[A-Z_]+\]/);
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-cli-files-'));
  data = join(dir, 'data');
  openStore({ dataDir: data }).close();
  mkdirSync(join(dir, 'adir'));
  writeFileSync(join(dir, 'afile'), 'not a directory\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('file-system errors on the command line', () => {
  it('--key and --bundle that do not exist or are directories: LK_FILE_*, exit 66', async () => {
    const cases: [string[], string][] = [
      [['audit', 'verify', '--data', data, '--key', join(dir, 'nope.pem')], 'LK_FILE_NOT_FOUND'],
      [['audit', 'verify', '--data', data, '--key', join(dir, 'adir')], 'LK_FILE_NOT_A_FILE'],
      [['audit', 'verify', '--bundle', join(dir, 'nope.jsonl')], 'LK_FILE_NOT_FOUND'],
      [['audit', 'verify', '--bundle', join(dir, 'adir')], 'LK_FILE_NOT_A_FILE'],
    ];
    for (const [args, code] of cases) {
      const r = await runCli(...args);
      expect(r.code, args.join(' ')).toBe(66);
      expect(r.err).toContain(`[${code}]`);
      noStack(r.err);
    }
  });

  it('export targets that are directories or in a missing folder: LK_OUTPUT_INVALID, exit 73, nothing signed', async () => {
    for (const format of ['bundle', 'csv', 'pdf']) {
      for (const out of [join(dir, 'adir'), join(dir, 'missing', 'x.out')]) {
        const r = await runCli('audit', 'export', '--data', data, '--tenant', 'site', '--format', format, '--out', out);
        expect(r.code, `${format} ${out}`).toBe(73);
        expect(r.err).toContain('[LK_OUTPUT_INVALID]');
        noStack(r.err);
      }
    }
    // a bundle export signs a checkpoint first: a refused target must not have left one behind
    expect(readCheckpointLog(checkpointLogFile(data)).checkpoints).toHaveLength(0);
    const key = await runCli('audit', 'key', '--data', data, '--out', join(dir, 'adir'));
    expect(key.code).toBe(73);
  });

  it('--data that is a regular file: LK_DATA_DIR_NOT_A_DIRECTORY, exit 66 (audit, serve)', async () => {
    const verify = await runCli('audit', 'verify', '--data', join(dir, 'afile'));
    expect(verify.code).toBe(66);
    expect(verify.err).toContain('[LK_DATA_DIR_NOT_A_DIRECTORY]');
    const serve = await runCli('serve', '--no-api', '--data', join(dir, 'afile'), '--log-level', 'silent');
    expect(serve.code).toBe(66);
    expect(serve.err).toContain('[LK_DATA_DIR_NOT_A_DIRECTORY]');
    noStack(serve.err);
  });

  it('a checkpoint log that is a directory or too large: LK_AUDIT_CHECKPOINT_LOG, exit 74', async () => {
    const d = join(dir, 'cp');
    openStore({ dataDir: d }).close();
    mkdirSync(checkpointLogFile(d));
    const asDir = await runCli('audit', 'verify', '--data', d);
    expect(asDir.code).toBe(74);
    expect(asDir.err).toContain('[LK_AUDIT_CHECKPOINT_LOG]');
    noStack(asDir.err);
    rmSync(checkpointLogFile(d), { recursive: true });
    writeFileSync(checkpointLogFile(d), '');
    truncateSync(checkpointLogFile(d), MAX_CHECKPOINT_LOG_BYTES + 1); // sparse: no disk used
    const big = await runCli('audit', 'verify', '--data', d);
    expect(big.code).toBe(74);
    expect(big.err).toContain('[LK_AUDIT_CHECKPOINT_LOG]');
  });

  it('an invalid --log-level: LK_VALIDATION, exit 2, before anything starts', async () => {
    const r = await runCli('serve', '--no-api', '--log-level', 'loud', '--data', join(dir, 'never'));
    expect(r.code).toBe(2);
    expect(r.err).toContain('[LK_VALIDATION]');
    noStack(r.err);
  });
});

describe('the configuration for systemd ExecStartPre (exit 78)', () => {
  it('a configuration that is a directory: LK_CONFIG_UNREADABLE, exit 78', async () => {
    const r = await runCli('config', 'check', join(dir, 'adir'));
    expect(r.code).toBe(78);
    expect(r.err).toContain('[LK_CONFIG_UNREADABLE]');
  });

  it('an unreadable configuration (permission denied) maps to LK_CONFIG_UNREADABLE, exit 78', () => {
    // as root chmod 000 does not deny a read; the mapping is checked on the loader's own path instead
    const f = join(dir, 'unreadable.yaml');
    copyFileSync(join(ROOT, 'config/site.yaml'), f);
    let err: unknown;
    try {
      loadConfig(join(f, 'below-a-file.yaml')); // ENOTDIR: a path through a file is "not found"
    } catch (e) {
      err = e;
    }
    expect(LkError.is(err, 'LK_CONFIG_NOT_FOUND')).toBe(true);
    expect(exitCodeFor(new LkError('LK_CONFIG_UNREADABLE'))).toBe(78);
    expect(exitCodeFor(fileError(Object.assign(new Error('EACCES'), { code: 'EACCES' }), f, 'key'))).toBe(66);
  });

  it('a YAML alias bomb in the configuration: LK_CONFIG_PARSE, exit 78, no ReferenceError', async () => {
    const f = join(dir, 'bomb.yaml');
    writeFileSync(f, `${readFileSync(join(ROOT, 'config/site.yaml'), 'utf8')}\nx_bomb:\n${ALIAS_BOMB.split('\n').map((l) => `  ${l}`).join('\n')}\n`);
    const r = await runCli('config', 'check', f);
    expect(r.code).toBe(78);
    expect(r.err).toContain('[LK_CONFIG_PARSE]');
    noStack(r.err);
  });

  it('a YAML alias bomb in the policy bundle: LK_POLICY_BUNDLE from policy show, not a crash', async () => {
    const cfgDir = join(dir, 'cfg');
    cpSync(join(ROOT, 'config'), cfgDir, { recursive: true });
    const policy = join(cfgDir, loadConfig(join(ROOT, 'config/site.yaml')).config.policy.bundle);
    const file = join(policy, 'agents.yaml');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n# appended\n${ALIAS_BOMB.replace(/^a:/, 'zz_a:')}\n`);
    const r = await runCli('policy', 'show', '--config', join(cfgDir, 'site.yaml'));
    expect(r.err).toContain('[LK_POLICY_BUNDLE]');
    expect(r.err).toMatch(/alias/i);
    noStack(r.err);
    expect(dirname(file)).toBe(policy);

    // what serve does with it: runs without a bundle (every write denied) and audits policy.refused
    const loaded = loadConfig(join(cfgDir, 'site.yaml'), { dataDir: join(dir, 'bomb-data') });
    const store = openStore({ dataDir: loaded.dataDir });
    try {
      const gate = openPolicy(store, loaded, silentLogger);
      expect(gate.bundle).toBeNull();
      expect(gate.error?.code).toBe('LK_POLICY_BUNDLE');
      const actions = queryAudit(store.db, SITE_TENANT, {}, { limit: 100 }).entries.map((e) => e.action);
      expect(actions).toContain('policy.refused');
    } finally {
      store.close();
    }
  });
});
