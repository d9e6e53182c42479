/**
 * `npm run profile:suite [-- <vitest args>]` (`-- --summarize`: read the last run's profiles again): the whole
 * suite (or the files named) with every Node process sampled (test/profile/preload.cjs), then where its CPU went:
 * per kind of process (vitest's fork workers, the `linekeeper` commands the tests run, the rest), the packages and
 * files by self time, and linekeeper's own functions (src/, connectors/, test/) by inclusive time. Time a process
 * spent blocked in spawnSync/execSync waiting for a child is shown apart (the child's CPU is counted in its own
 * profile). Chromium, mosquitto and python are not Node: what they cost is the process CPU printed by the run minus
 * what is attributed here. Profiles go to .tmp/profile-suite. The profiler's overhead makes the suite slower than
 * `npm test`: compare shares, not durations.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = resolve(root, '.tmp/profile-suite');
/** `--summarize`: only read the profiles the last run left. */
const summarizeOnly = process.argv.includes('--summarize');
if (!summarizeOnly) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
}

/** CPU seconds of the children this process has waited for (Linux /proc; USER_HZ 100), or NaN elsewhere. */
const childCpuS = () => {
  try {
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return Number.NaN;
  }
};
const before = childCpuS();
const run = summarizeOnly ? { status: null } : spawnSync(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', ...process.argv.slice(2)], {
  cwd: root, stdio: 'inherit',
  env: { ...process.env, LK_PROFILE_DIR: dir, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${join(root, 'test/profile/preload.cjs')}`.trim() },
});
const cpuS = childCpuS() - before;

const pkgOf = (url) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return `npm:${m[1]}`;
  const r = url.replace(/^file:\/\//, '');
  return r.startsWith(root) ? r.slice(root.length) : r;
};
const ours = /^(src|connectors|test|dist\/src|dist\/connectors)\//;
/** A sample whose stack holds one of these is a thread blocked until a child exits: the child's CPU is its own. */
const WAIT = new Set(['spawnSync', 'execSync', 'execFileSync']);
const waiting = (frames) => frames.some((c) => WAIT.has(c.functionName) && /child_process$/.test(c.url));
/** What a process is, from the scripts it ran (the first that matches). */
const KINDS = [
  ['vitest fork workers', /\/vitest\/dist\/(workers\/|chunks\/init-forks)/],
  ['plant simulators in their own process (serve, the fault tests)', /\/connectors\/sim\/child-main\.[jt]s$/],
  ['linekeeper commands run by tests', /\/bin\/linekeeper\.js$/],
  ['vitest itself (collection, transforms, reporting)', /\/vitest\/dist\/cli\.js$/],
  ['the TypeScript compiler (type-check, dist/ build)', /\/typescript\/lib\/tsc\.js$/],
];
const kinds = new Map();
const self = new Map();
const incl = new Map();
let busy = 0;
let waited = 0;
const add = (m, k, v) => m.set(k, (m.get(k) ?? 0) + v);
const files = readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'));
const profiles = files.map((f) => ({ pid: f.split('-')[0], p: JSON.parse(readFileSync(join(dir, f), 'utf8')) }));
// a process's kind from the scripts of all its profiles: a profile written every 5 s holds only what ran then
const urlsOf = new Map();
for (const { pid, p } of profiles) for (const n of p.nodes) (urlsOf.get(pid) ?? urlsOf.set(pid, new Set()).get(pid)).add(n.callFrame.url);
const kindOf = new Map([...urlsOf].map(([pid, urls]) => [pid, KINDS.find(([, re]) => [...urls].some((u) => re.test(u)))?.[0] ?? 'other Node processes']));
for (const { pid, p } of profiles) {
  const nodes = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const kind = kindOf.get(pid);
  let mine = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1e6;
    const cf = nodes.get(p.samples[i]).callFrame;
    if (cf.functionName === '(idle)') continue;
    // the sample's stack, leaf first: read once for the wait and for the inclusive times
    const stack = [];
    for (let up = p.samples[i]; up !== undefined; up = parent.get(up)) stack.push(nodes.get(up).callFrame);
    if (waiting(stack)) {
      waited += dt;
      continue;
    }
    mine += dt;
    add(self, pkgOf(cf.url) || cf.functionName, dt);
    const seen = new Set();
    for (const c of stack) {
      const where = pkgOf(c.url);
      if (!ours.test(where)) continue;
      const k = `${c.functionName || '(anonymous)'} ${where}:${c.lineNumber + 1}`;
      if (!seen.has(k)) {
        seen.add(k);
        add(incl, k, dt);
      }
    }
  }
  busy += mine;
  const k = kinds.get(kind) ?? { s: 0, n: new Set() };
  k.s += mine;
  k.n.add(pid);
  kinds.set(kind, k);
}
const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `  ${v.toFixed(1).padStart(7)} s  ${k}`).join('\n');
console.log(`\nprofile-suite: ${summarizeOnly ? 'the profiles of the last run' : `vitest exited ${run.status}; the run's process CPU ${cpuS.toFixed(0)} s (children included)`}; attributed to Node ${busy.toFixed(0)} s, plus ${waited.toFixed(0)} s blocked waiting for a child`);
for (const [k, v] of [...kinds].sort((a, b) => b[1].s - a[1].s)) console.log(`  ${v.s.toFixed(1).padStart(7)} s  ${k} (${v.n.size} processes)`);
console.log(`\nself time by package or file:\n${top(self, 30)}`);
console.log(`\nlinekeeper's functions by inclusive time:\n${top(incl, 50)}`);
process.exitCode = summarizeOnly ? 0 : (run.status ?? 1);
