/**
 * The offline install media: `npm run package` (tar.gz only here: the .deb holds the same tree), unpacked into an
 * empty directory, and `linekeeper doctor` run from there against the shipped configuration templates — with
 * nothing of this checkout on the module path. Slow (it copies the production node_modules): one archive, one
 * doctor run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const work = mkdtempSync(join(tmpdir(), 'lk-pkg-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('npm run package → unpack → doctor', () => {
  it('builds an archive that runs doctor from an empty directory', () => {
    const out = join(work, 'out');
    // reuse dist/ when it is there (the CI build made it); the script compiles otherwise
    const made = execFileSync(process.execPath, ['tools/package.mjs', '--out', out, '--skip-build', '--no-deb'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
    expect(made).toMatch(/linekeeper-.+-linux-.+-node\d+\.tar\.gz$/);
    const into = join(work, 'unpacked');
    mkdirSync(into);
    execFileSync('tar', ['-xzf', made, '-C', into]);
    const [top] = readdirSync(into);
    const app = join(into, top!);
    for (const f of ['bin/linekeeper.js', 'dist/src/cli/main.js', 'console/app.js', 'install.sh', 'BUILDINFO', 'systemd/linekeeper.service', 'config/site.yaml', 'config/policy/bundle.yaml', 'config/golden', 'config/models', 'tools/verify-audit-bundle.mjs']) expect(existsSync(join(app, f)), f).toBe(true);
    expect(existsSync(join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/typescript'))).toBe(false); // production dependencies only
    expect(JSON.parse(readFileSync(join(app, 'BUILDINFO'), 'utf8')).abi).toBe(process.versions.modules);
    // the standalone verifier that `linekeeper archive` copies into every archive (found beside dist/ on an installed node)
    expect(readFileSync(join(app, 'tools/verify-audit-bundle.mjs'), 'utf8')).toBe(readFileSync('tools/verify-audit-bundle.mjs', 'utf8'));

    // what install.sh does with the templates, into a scratch /etc; a free port so a busy 8080 does not matter
    const etc = join(work, 'etc');
    cpSync(join(app, 'config'), etc, { recursive: true });
    writeFileSync(join(etc, 'site.yaml'), `${readFileSync(join(etc, 'site.yaml'), 'utf8')}api: { host: 127.0.0.1, port: 0 }\n`);
    const empty = join(work, 'cwd');
    mkdirSync(empty);
    const r = spawnSync(process.execPath, [join(app, 'bin/linekeeper.js'), 'doctor', '--json', '-c', join(etc, 'site.yaml'), '-d', join(work, 'data')], { cwd: empty, encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' } });
    expect(r.stderr).toBe('');
    const report = JSON.parse(r.stdout) as { status: string; checks: { id: string; status: string; message: string }[] };
    // the clock may be unknown in a container (warn); the policy bundle is not signed before the first start (warn,
    // saying so); everything else passes
    for (const c of report.checks) expect(c.id === 'clock' || c.id === 'policy' ? ['ok', 'warn'] : ['ok'], c.id).toContain(c.status);
    const policy = report.checks.find((c) => c.id === 'policy')!;
    if (policy.status === 'warn') expect(policy.message).toMatch(/not signed|unsigned/i);
    expect([0, 1]).toContain(r.status);

    // [A11.4] the qualification of the installed package: a validation lead of the site signs IQ and OQ reports
    const lk = (args: string[], input = ''): { status: number | null; stdout: string; stderr: string } =>
      spawnSync(process.execPath, [join(app, 'bin/linekeeper.js'), ...args, '-c', join(etc, 'site.yaml'), '--data', join(work, 'data')], { cwd: empty, encoding: 'utf8', input, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' } });
    const adminPw = 'install-admin-Pw-91!';
    const leadPw = 'validation-lead-Pw-42!';
    expect(lk(['users', 'add', 'it.admin', '--name', 'Ivo Admin', '--role', 'admin', '--tenant', 'acme-pharma'], `${adminPw}\n`).status).toBe(0);
    expect(lk(['users', 'add', 'v.lead', '--name', 'Vera Lead', '--role', 'qa_reviewer', '--tenant', 'acme-pharma', '--as', 'it.admin'], `${adminPw}\nfirst-${leadPw}\n`).status).toBe(0);
    expect(lk(['users', 'passwd', 'v.lead', '--as', 'v.lead'], `first-${leadPw}\n${leadPw}\n`).status).toBe(0);
    const reports = join(work, 'reports');
    const iq = lk(['validate', 'iq', '--as', 'v.lead', '-o', reports, '--json'], `${leadPw}\n`);
    const iqOut = JSON.parse(iq.stdout) as { result: string; files: { json: string; pdf: string }; checks: { id: string; status: string; requirements: string[] }[] };
    // the files, the Node ABI and the native addon are the package's; the unit, the data directory's owner and the
    // clock are this machine's (not a systemd install), so the IQ's verdict here is whatever they found
    for (const id of ['IQ-FILES', 'IQ-NODE', 'IQ-NATIVE', 'IQ-CONFIG', 'IQ-AUDIT']) expect(iqOut.checks.find((c) => c.id === id)?.status, id).toBe('pass');
    for (const c of iqOut.checks) expect(c.requirements.length, c.id).toBeGreaterThan(0);
    expect(iq.status).toBe(iqOut.result === 'pass' ? 0 : 1);
    const oq = lk(['validate', 'oq', '--as', 'v.lead', '-o', reports, '--json'], `${leadPw}\n`);
    expect(oq.status, oq.stderr).toBe(0);
    const oqOut = JSON.parse(oq.stdout) as { result: string; files: { json: string; pdf: string }; checks: { status: string }[] };
    expect(oqOut.result).toBe('pass');
    expect(oqOut.checks.length).toBeGreaterThanOrEqual(10);
    // both verify offline: with linekeeper, and with the standalone verifier alone, pinned to the site's public key
    const pub = join(work, 'data/keys/site-ed25519.pub.pem');
    for (const f of [iqOut.files.json, oqOut.files.json]) {
      const v = spawnSync(process.execPath, [join(app, 'bin/linekeeper.js'), 'validate', 'verify', f, '--key', pub], { cwd: empty, encoding: 'utf8' });
      expect(v.stdout.split('\n')[0]).toMatch(/^ok: (iq|oq) report/);
      const alone = spawnSync(process.execPath, [join(app, 'tools/verify-audit-bundle.mjs'), f, '--key', pub], { cwd: empty, encoding: 'utf8' });
      expect(alone.status, alone.stdout + alone.stderr).toBe(0);
    }
  }, 900_000);
});
