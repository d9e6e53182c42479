/**
 * R6/R7 by construction: the guarded writer (src/engine/guarded-writer.ts) is
 * the only module that can obtain a connector's write capability. This test
 * reads every source file under src/ and connectors/ and fails on any other
 * way to reach a write: claiming the capability, naming its type, importing a
 * connector's internals, speaking a raw protocol library from src/, or
 * writing the simulator's plant directly from src/.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const GUARDED_WRITER = 'src/engine/guarded-writer.ts';
/** Where the capability is defined and implemented. */
const DEFINERS = [/^connectors\/types\.ts$/, /^connectors\/(opcua|modbus)\//];
/**
 * What src/ may import from connectors/: entry points, the interface, and the OPC UA PKI (certificate
 * files for `linekeeper certs`, no session, no write) — never other internals.
 */
const CONNECTOR_ENTRY = /connectors\/(index|types|(opcua|modbus|sim|mqtt|mes|lims)\/index|opcua\/pki)\.js$/;

export interface Violation {
  readonly file: string;
  readonly rule: string;
  readonly line: number;
}

function stripComments(src: string): string {
  // keep line numbers: replace comment characters with spaces
  return src
    .replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' '))
    .replace(/(^|[^:'"`\\])\/\/[^\n]*/gm, (m, p: string) => p + ' '.repeat(m.length - p.length));
}

/** Every way around the guarded writer that a source file shows. */
export function writeBypasses(files: readonly { path: string; source: string }[]): Violation[] {
  const out: Violation[] = [];
  for (const { path, source } of files) {
    if (path === GUARDED_WRITER) continue;
    const code = stripComments(source);
    const inSrc = path.startsWith('src/');
    const definer = DEFINERS.some((r) => r.test(path));
    const hit = (rule: string, re: RegExp): void => {
      for (const m of code.matchAll(new RegExp(re.source, `${re.flags.replace('g', '')}g`))) {
        out.push({ file: path, rule, line: code.slice(0, m.index).split('\n').length });
      }
    };
    if (inSrc) hit('obtains the write capability (claimWriter)', /\bclaimWriter\b/);
    else hit('calls claimWriter()', /\.\s*claimWriter\s*\(|\[\s*['"`]claimWriter['"`]\s*\]/);
    if (!definer) hit('names the WriteCapability type', /\bWriteCapability\b/);
    if (inSrc) {
      // a value import of a connector's internals could reach its write functions; `import type` cannot
      for (const m of code.matchAll(/import\s+(?!type\s)[^;]*?from\s+['"]([^'"]*connectors\/[^'"]+)['"]|(?<!typeof\s+)import\(\s*['"]([^'"]*connectors\/[^'"]+)['"]/g)) {
        const spec = m[1] ?? m[2]!;
        if (!CONNECTOR_ENTRY.test(spec)) out.push({ file: path, rule: `imports connector internals (${spec})`, line: code.slice(0, m.index).split('\n').length });
      }
      // protocol clients and their write calls belong in connectors/ (importing node-opcua for its logger is fine)
      hit('opens a raw protocol client or writes through one', /\bOPCUAClient\b|\bModbusRTU\b|\.\s*createSession\s*\(|\bsession\s*\.\s*write\s*\(|\.\s*(writeRegisters?|writeCoils?|writeFC\d+)\s*\(/);
      // setSupervisorState reverts (LOST) or re-arms (ATTENDED) a PLC: a write like any other, and re-arming is a person's act
      hit("writes the simulator's plant directly", /\.\s*(writeSetpoints?|setSupervisorState)\s*\(/);
    }
  }
  return out;
}

function sources(dir: string): { path: string; source: string }[] {
  const out: { path: string; source: string }[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = `${dir}/${name}`;
    const abs = join(ROOT, rel);
    if (statSync(abs).isDirectory()) out.push(...sources(rel));
    else if (/\.(ts|mts|js|mjs)$/.test(name) && !name.endsWith('.d.ts')) out.push({ path: relative(ROOT, abs).split(sep).join('/'), source: readFileSync(abs, 'utf8') });
  }
  return out;
}

describe('architecture: the guarded writer is the single write path', () => {
  it('no module under src/ or connectors/ other than the guarded writer reaches a write capability', () => {
    const files = [...sources('src'), ...sources('connectors')];
    expect(files.some((f) => f.path === GUARDED_WRITER)).toBe(true);
    expect(files.length).toBeGreaterThan(20);
    expect(writeBypasses(files)).toEqual([]);
  });

  it('the guarded writer does obtain it (otherwise nothing could write at all)', () => {
    const gw = readFileSync(join(ROOT, GUARDED_WRITER), 'utf8');
    expect(stripComments(gw)).toMatch(/\.claimWriter\(\)/);
  });

  it('catches each kind of bypass (the checker itself can fail)', () => {
    const rogue = [
      { path: 'src/api/rogue.ts', source: "import type { WriteCapability } from '../../connectors/types.js';\nconst w = c.claimWriter();\n" },
      { path: 'src/agents/sneaky.ts', source: "import { writeSetpoint } from '../../connectors/opcua/writer.js';\n" },
      { path: 'src/twin/raw.ts', source: "import { OPCUAClient } from 'node-opcua';\nconst c = OPCUAClient.create({});\nawait client.writeRegisters(100, [1, 2]);\n" },
      { path: 'src/api/lazy.ts', source: "const w = await import('../../connectors/modbus/connector.js');\n" },
      { path: 'src/engine/plant.ts', source: "sim.plant.writeSetpoint('press', 'MainForce', 30);\n" },
      { path: 'src/engine/rearm.ts', source: "sim.plant.setSupervisorState('press', 'ATTENDED');\n" },
      { path: 'connectors/mqtt/bridge.ts', source: "const cap = conn['claimWriter']();\n" },
      { path: 'src/engine/indirect.ts', source: 'const { claimWriter } = connector;\n' },
    ];
    const v = writeBypasses(rogue);
    expect(new Set(v.map((x) => x.file))).toEqual(new Set(rogue.map((r) => r.path)));
    expect(v.find((x) => x.file === 'src/api/rogue.ts' && x.rule.includes('claimWriter'))?.line).toBe(2);
    expect(v.filter((x) => x.file === 'src/twin/raw.ts')).toHaveLength(3);
  });

  it('does not flag comments, the definitions in connectors, or entry-point imports', () => {
    const fine = [
      { path: 'src/api/doc.ts', source: "// only the guarded writer may call claimWriter() and hold a WriteCapability\nimport { createConnectors } from '../../connectors/index.js';\n" },
      { path: 'connectors/opcua/connector.ts', source: 'claimWriter(): WriteCapability { return cap; }\n' },
      { path: 'src/cli/commands/certs.ts', source: "import { listCertificates } from '../../../connectors/opcua/index.js';\nimport type { CertificateInfo } from '../../../connectors/opcua/pki.js';\nconst u = 'opc.tcp://x'; // not a comment start\n" },
      { path: 'src/cli/commands/sim.ts', source: "const opcua = await import('node-opcua');\nopcua.setWarningLogger(log);\n" },
    ];
    expect(writeBypasses(fine)).toEqual([]);
  });
});
