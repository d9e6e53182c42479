import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LkError } from '../../src/errors.js';
import { defaultConfigFile, loadConfig } from '../../src/config/load.js';
import { meaningsInForce } from '../../src/domain/signature-meanings.js';
import { configJsonSchema, jsonSchemaOf } from '../../src/cli/config-schemas.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { LINEKEEPER_BIN } from '../helpers/bin.js';
import { configRefusal } from '../helpers/config.js';

const original = readFileSync(defaultConfigFile(), 'utf8');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lk-config-'));
  cpSync(join(defaultConfigFile(), '..', 'policy'), join(dir, 'policy'), { recursive: true });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Write a variant of the default site.yaml and return its path. */
function variant(name: string, edit: (text: string) => string): string {
  const f = join(dir, `${name}.yaml`);
  const text = edit(original);
  expect(text).not.toBe(original); // the edit must have applied
  writeFileSync(f, text);
  return f;
}

describe('site configuration', () => {
  it('accepts the embedded default and freezes it', () => {
    const c = loadConfig();
    expect(c.config.line.id).toBe('line-3');
    expect(c.config.tenants.length).toBeGreaterThanOrEqual(2);
    expect(c.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.isFrozen(c.config.equipment[0])).toBe(true);
    expect(() => {
      (c.config as { data_dir: string }).data_dir = 'x';
    }).toThrow(TypeError);
  });

  it('hash changes with content', () => {
    const f = variant('seed', (t) => t.replace('seed: 20261121', 'seed: 7'));
    expect(loadConfig(f).hash).not.toBe(loadConfig().hash);
  });

  const cases: [string, (t: string) => string, RegExp][] = [
    ['unknown unit', (t) => t.replace('unit: "kN", node_id: "s=press.Setpoints.MainForce"', 'unit: "kNN", node_id: "s=press.Setpoints.MainForce"'), /equipment\[2\]\.tags\[1\]\.unit: unknown unit "kNN"/],
    ['unknown key', (t) => t.replace('  timezone: UTC', '  timezone: UTC\n  colour: red'), /:\d+: site\.colour: unknown key "colour"/],
    ['wrong type', (t) => t.replace('time_scale: 60', 'time_scale: fast'), /simulator\.time_scale: /],
    ['duplicate tag', (t) => t.replace('{ name: Hardness, kind: measurement', '{ name: TabletWeight, kind: measurement'), /duplicate tag "press\.TabletWeight"/],
    ['duplicate node id', (t) => t.replace('node_id: "s=press.Measurements.Hardness"', 'node_id: "s=press.Measurements.TabletWeight"'), /duplicate node id "s=press\.Measurements\.TabletWeight"/],
    ['overlapping registers', (t) => t.replace('name: BlendRsd, kind: measurement, unit: "%", table: input, address: 4', 'name: BlendRsd, kind: measurement, unit: "%", table: input, address: 3'), /overlaps/],
    ['dangling connection', (t) => t.replace('connection: modbus-line\n    unit_id: 1', 'connection: modbus-east\n    unit_id: 1'), /equipment\[0\]\.connection: unknown connection "modbus-east"/],
    ['dangling line equipment', (t) => t.replace('equipment: [blender, fluidbed,', 'equipment: [blender, dryer,'), /line\.equipment\[1\]: unknown equipment "dryer"/],
    ['dangling product', (t) => t.replace('products: [ir-family-b]', 'products: [ir-family-z]'), /tenants\[1\]\.products\[0\]: unknown product "ir-family-z"/],
    ['missing supervisor tag', (t) => t.replace(/      - \{ name: RevertCount, kind: supervisor, unit: "1", node_id: "s=coater\.Supervisor\.RevertCount", data_type: UInt32 \}\n/, ''), /missing supervisor tag "RevertCount"/],
    ['setpoint in input register', (t) => t.replace('name: Speed, kind: setpoint, unit: "{rev}/min", table: holding', 'name: Speed, kind: setpoint, unit: "{rev}/min", table: input'), /a setpoint must be a holding register/],
    ['inverted range', (t) => t.replace('range: { min: 0, max: 40 }', 'range: { min: 40, max: 0 }'), /range: min \(40\) must be below max \(0\)/],
    ['reserved tenant id', (t) => t.replace('{ id: borealis-bio, name: Borealis Bio', '{ id: site, name: Borealis Bio'), /tenants\[1\]\.id: tenant id "site" is reserved/],
    ['protocol mismatch', (t) => t.replace('protocol: modbus\n    connection: modbus-line\n    unit_id: 2', 'protocol: modbus\n    connection: opcua-line\n    unit_id: 2'), /equipment\[1\]\.protocol: equipment speaks modbus but connection "opcua-line" is opcua/],
    // configurations that used to pass `config check` but cannot work
    ['heartbeat at the watchdog timeout', (t) => t.replace('heartbeat: { period_ms: 1000 }', 'heartbeat: { period_ms: 3000 }'), /equipment\[0\]\.heartbeat\.period_ms: heartbeat period 3000 ms must be below the PLC watchdog timeout/],
    ['heartbeat past the timer range', (t) => t.replace('heartbeat: { period_ms: 1000 }', 'heartbeat: { period_ms: 2147483648 }'), /equipment\[0\]\.heartbeat\.period_ms: must be at most 2147483647 ms/],
    ['watchdog timeout past UInt32', (t) => t.replace('watchdog_timeout_ms: 3000', 'watchdog_timeout_ms: 4294967296'), /simulator\.watchdog_timeout_ms: must be at most 2147483647 ms/],
    ['checkpoint interval past the timer range', (t) => t.replace('checkpoint_interval_s: 300', 'checkpoint_interval_s: 2147484'), /audit\.checkpoint_interval_s: must be at most 2147483 s/],
    ['unit with stray whitespace', (t) => t.replace('unit: "kN", node_id: "s=press.Setpoints.MainForce"', 'unit: "kN ", node_id: "s=press.Setpoints.MainForce"'), /equipment\[2\]\.tags\[1\]\.unit: must not contain whitespace/],
    ['unknown time zone', (t) => t.replace('  timezone: UTC', '  timezone: Mars/Olympus_Mons'), /site\.timezone: unknown IANA time zone/],
    ['empty data dir', (t) => t.replace('data_dir: ./data', 'data_dir: ""'), /data_dir: must not be empty/],
  ];

  for (const [name, edit, message] of cases) {
    it(`refuses ${name}, naming file and path`, () => {
      const f = variant(name.replace(/\s+/g, '-'), edit);
      const err = configRefusal(f);
      expect(err.code).toBe('LK_CONFIG_INVALID');
      expect(err.message).toContain(`${name.replace(/\s+/g, '-')}.yaml`);
      expect(err.message).toMatch(message);
    });
  }

  it('refuses YAML syntax errors with a line number', () => {
    const f = variant('syntax', (t) => t.replace('  name: Ravenna contract manufacturing site', '  name: [unclosed'));
    const err = configRefusal(f);
    expect(err.code).toBe('LK_CONFIG_PARSE');
    expect(err.message).toMatch(/syntax\.yaml:\d+:/);
  });

  it('refuses a data_dir that is a regular file as a configuration error (exit 78 for ExecStartPre)', () => {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const err = configRefusal(variant('data-file', (t) => t.replace('data_dir: ./data', `data_dir: ${file}`)));
    expect(err.code).toBe('LK_CONFIG_INVALID');
    expect(err.message).toMatch(/data-file\.yaml:\d+: data_dir: .* is not a directory/);
  });

  it('refuses a missing file', () => {
    expect(configRefusal(join(dir, 'nope.yaml')).code).toBe('LK_CONFIG_NOT_FOUND');
  });

  it('[P11.10(k)] ships a JSON Schema in sync with the zod schema', () => {
    const shipped = JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'site.schema.json'), 'utf8')) as unknown;
    expect(shipped).toEqual(configJsonSchema());
  });

  it('ships the JSON Schemas of a batch record, a QC result and the site data of `models fit` in sync, and an independent validator (Ajv) accepts a sample of each and refuses broken ones', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    for (const kind of ['batch-record', 'qc-result', 'recorded-batches', 'nir-calibration'] as const) {
      const shipped = JSON.parse(readFileSync(join(defaultConfigFile(), '..', `${kind}.schema.json`), 'utf8')) as Record<string, unknown>;
      expect(shipped).toEqual(jsonSchemaOf(kind));
    }
    const record = JSON.parse(readFileSync(join(defaultConfigFile(), '..', 'batches', 'acme-pharma', 'B-1042.json'), 'utf8')) as Record<string, unknown>;
    const validRecord = ajv.compile(jsonSchemaOf('batch-record'));
    expect(validRecord(record), JSON.stringify(validRecord.errors)).toBe(true);
    expect(validRecord({ ...record, batch: 'b 1042' })).toBe(false);
    expect(validRecord({ ...record, specifications: { ...(record['specifications'] as object), defect_rate_max_pct: 'low' } })).toBe(false);
    const result = { format: 1, batch: 'B-1042', tenant: 'acme-pharma', test: 'dissolution', result: 88, unit: '%', specification: 'Q = 80 % at 30 min', status: 'pass', analyst: 'a.verdi', reviewed_by: 's.neri', reported_at: '2026-11-21T09:30:00Z', lims_ref: 'LIMS-88123' };
    const validResult = ajv.compile(jsonSchemaOf('qc-result'));
    expect(validResult(result), JSON.stringify(validResult.errors)).toBe(true);
    expect(validResult({ ...result, test: 'taste' })).toBe(false);
    const nir = { format: 1, kind: 'nir-calibration', description: 'analyser 2, HPLC assay', analyte: 'potency', wavelengths: { start_nm: 1100, step_nm: 4, count: 2 }, spectra: [{ id: 'S1', absorbance: [0.41, 0.42], reference_pct: 99.2, lims_ref: 'LIMS-1' }] };
    const validNir = ajv.compile(jsonSchemaOf('nir-calibration'));
    expect(validNir(nir), JSON.stringify(validNir.errors)).toBe(true);
    expect(validNir({ ...nir, spectra: [{ id: 'S1', absorbance: ['0.41'], reference_pct: 99.2 }] })).toBe(false);
    expect(validNir({ ...nir, spectra: [{ id: 'S1', absorbance: [0.41], reference_pct: 99.2, assay: 'hplc' }] })).toBe(false);
  });
});

describe('supervision profiles in the configuration', () => {
  const pressHb = '- { name: Heartbeat, kind: supervisor, unit: "1", node_id: "s=press.Supervisor.Heartbeat", data_type: UInt32 }';
  const pressHeader = '    protocol: opcua\n    connection: opcua-line\n    heartbeat: { period_ms: 1000 }\n    tags:\n      - { name: FillDepth';

  it('a Boolean life bit must be a toggle; a counter wrap point must fit its type; the message names the path', () => {
    const bit = configRefusal(variant('bool-life-bit', (t) => t.replace(pressHb, pressHb.replace('data_type: UInt32', 'data_type: Boolean'))));
    expect(bit.message).toMatch(/bool-life-bit\.yaml:\d+: equipment\[\d+\]\.heartbeat\.kind: the Heartbeat tag is a Boolean life bit: heartbeat\.kind must be toggle/);
    const wrap = configRefusal(variant('wrap-too-big', (t) => t.replace(pressHeader, pressHeader.replace('heartbeat: { period_ms: 1000 }', 'heartbeat: { period_ms: 1000, wrap_at: 70000 }')).replace(pressHb, pressHb.replace('UInt32', 'UInt16'))));
    expect(wrap.message).toMatch(/heartbeat\.wrap_at: 70000 does not fit the Heartbeat tag's type UInt16 \(at most 65535\)/);
    const toggle = loadConfig(variant('toggle-bit', (t) => t.replace(pressHeader, pressHeader.replace('heartbeat: { period_ms: 1000 }', 'heartbeat: { period_ms: 1000, kind: toggle }')).replace(pressHb, pressHb.replace('UInt32', 'Boolean'))));
    expect(toggle.config.equipment.find((e) => e.id === 'press')!.heartbeat).toMatchObject({ kind: 'toggle' });
  });

  it('state values have the SupervisorState tag\'s type (words for a String), and none means both supervised and fallback', () => {
    const withState = (state: string) => (t: string) => t.replace(pressHeader, pressHeader.replace('heartbeat: { period_ms: 1000 }', `heartbeat: { period_ms: 1000 }\n    supervision: { state: ${state} }`));
    const numbers = configRefusal(variant('state-numbers', withState('{ supervised: [1], fallback: [0] }')));
    expect(numbers.message).toMatch(/equipment\[\d+\]\.supervision\.state\.supervised\[0\]: SupervisorState is a String: its values are words, not 1/);
    const both = configRefusal(variant('state-both', withState('{ supervised: [REMOTE, AUTO], fallback: [LOCAL, AUTO] }')));
    expect(both.message).toMatch(/supervision\.state\.fallback: "AUTO" cannot mean both supervised and fallback/);
    const ok = loadConfig(variant('state-words', withState('{ supervised: [REMOTE], fallback: [LOCAL] }')));
    expect(ok.config.equipment.find((e) => e.id === 'press')!.supervision).toMatchObject({ state: { supervised: ['REMOTE'], fallback: ['LOCAL'] } });
  });

  it('the line\'s phase source names a configured tag and the PLC\'s own values per phase (e.g. a PackML UnitState)', () => {
    const withPhase = (phase: string) => (t: string) => t.replace(/(^line:\n(?:  .*\n)*?  equipment: .*\n)/m, `$1  phase: ${phase}\n`);
    const bad = configRefusal(variant('phase-unknown-tag', withPhase('{ tag: plc.UnitState, values: { COMPRESS: [6] } }')));
    expect(bad.message).toMatch(/line\.phase\.tag: the phase tag "plc\.UnitState" is not a configured tag/);
    const ok = loadConfig(variant('phase-packml', withPhase('{ tag: plc.BatchPhase, values: { BLEND: [BLENDING], COMPRESS: [COMPRESS, PRESSING] }, timeout_s: 600 }')));
    expect(ok.config.line.phase).toEqual({ tag: 'plc.BatchPhase', values: { BLEND: ['BLENDING'], COMPRESS: ['COMPRESS', 'PRESSING'] }, timeout_s: 600 });
  });

  it('a monitor-only unit needs no supervisor tags; a supervised one without them is refused, saying how to only watch it', () => {
    const strip = (t: string) => t.split('\n').filter((l) => !(l.includes('node_id: "s=press.Supervisor.'))).join('\n');
    const refused = configRefusal(variant('no-supervisor-tags', strip));
    expect(refused.message).toMatch(/missing supervisor tag "Heartbeat" \(the PLC watchdog needs it; a unit linekeeper only watches is supervision\.mode: monitor_only\)/);
    const watched = loadConfig(variant('monitor-only', (t) => strip(t).replace(pressHeader, pressHeader.replace('heartbeat: { period_ms: 1000 }', 'heartbeat: { period_ms: 1000 }\n    supervision: { mode: monitor_only }'))));
    expect(watched.config.equipment.find((e) => e.id === 'press')!.supervision?.mode).toBe('monitor_only');
  });
});

describe('signature meanings in the configuration (signatures.meanings)', () => {
  const withMeanings = (yaml: string) => (t: string) => `${t.trimEnd()}\nsignatures:\n  meanings:\n${yaml}`;

  it('[A11.14] [P11.50] a site\'s list loads, beside the built-in meanings of the purposes it lists nothing for', () => {
    const c = loadConfig(variant('meanings-ok', withMeanings([
      '    - { id: qa-release, text: "Released by QA: batch {batch}", for: [release], decision: approve }',
      '    - { id: qa-rejection, text: "Rejected by QA: batch {batch}", for: [release], decision: reject }',
      '    - { id: reviewed, text: "Reviewed", for: [trail_review, exception_close] }',
    ].join('\n'))));
    const site = c.config.signatures!.meanings!;
    expect(site.map((m) => m.id)).toEqual(['qa-release', 'qa-rejection', 'reviewed']);
    const inForce = meaningsInForce(site);
    // the site's words for what it lists; the built-in ones for the rest (a move, a model change, …), none for release or review
    expect(inForce.filter((m) => m.for.includes('release')).map((m) => [m.id, m.source])).toEqual([['qa-release', 'site'], ['qa-rejection', 'site']]);
    expect(inForce.filter((m) => m.for.includes('trail_review')).map((m) => m.id)).toEqual(['reviewed']);
    expect(inForce.filter((m) => m.for.includes('move')).map((m) => [m.id, m.source])).toEqual([['move-approval', 'default'], ['move-rejection', 'default']]);
    // the embedded default configures none: the built-in list is in force
    expect(loadConfig().config.signatures).toBeUndefined();
  });

  const refused: [string, string, RegExp][] = [
    ['a purpose that does not exist', '    - { id: qa-release, text: "QA release of batch {batch}", for: [release, shipping] }', /:\d+: signatures\.meanings\[0\]\.for\[1\]: .*release/],
    ['a duplicate id', '    - { id: qa-release, text: "QA release of batch {batch}", for: [release] }\n    - { id: qa-release, text: "QA rejection of batch {batch}", for: [release] }', /:\d+: signatures\.meanings\[1\]\.id: duplicate meaning id "qa-release" \(meanings\[0\] has it\)/],
    ['a placeholder the purpose does not fill', '    - { id: lot-release, text: "QA release of lot {lot}", for: [release] }', /signatures\.meanings\[0\]\.text: \{lot\} is not filled for release \(it fills \{batch\}, \{run\}, \{approval\}\)/],
    ['a placeholder one of its purposes does not fill', '    - { id: run-done, text: "Run {run} reviewed", for: [trail_review, policy_change] }', /signatures\.meanings\[0\]\.text: \{run\} is not filled for policy_change/],
    ['a decision the purpose does not have', '    - { id: reviewed, text: "Reviewed", for: [trail_review], decision: approve }', /signatures\.meanings\[0\]\.decision: trail_review has no decisions to limit an entry to/],
    ['an entry of a purpose with decisions that names none', '    - { id: qa-disposition, text: "QA disposition of batch {batch}", for: [release] }', /:\d+: signatures\.meanings\[0\]\.decision: required for release: the decision it is signed for \(approve, reject\)/],
    ['a decision of another purpose', '    - { id: qa-ok, text: "QA: batch {batch} fine", for: [release], decision: validated }', /signatures\.meanings\[0\]\.decision: "validated" is not a decision of release \(approve, reject\)/],
    ['the same words twice for one purpose', '    - { id: a-release, text: "QA release of batch {batch}", for: [release] }\n    - { id: b-release, text: "QA  Release of batch {batch}", for: [release] }', /signatures\.meanings\[1\]\.text: the same words as meanings\[0\] for release/],
    ['an id that is not lower-case words', '    - { id: QA_Release, text: "QA release of batch {batch}", for: [release] }', /signatures\.meanings\[0\]\.id: must be lower-case letters and digits/],
    ['a brace that is no placeholder', '    - { id: qa-release, text: "QA release of batch {Batch}", for: [release] }', /signatures\.meanings\[0\]\.text: a brace that is not a placeholder/],
    ['an unknown key', '    - { id: qa-release, text: "QA release of batch {batch}", for: [release], wording: x }', /signatures\.meanings\[0\]\.wording: unknown key "wording"/],
    ['an empty list', '    []', /signatures\.meanings: /],
  ];
  for (const [name, yaml, message] of refused) {
    it(`[A11.14] refuses ${name}, naming file and path`, () => {
      const file = `meanings-${name.replace(/\W+/g, '-')}`;
      const err = configRefusal(variant(file, withMeanings(yaml)));
      expect(err.code).toBe('LK_CONFIG_INVALID');
      expect(err.message).toContain(`${file}.yaml`);
      expect(err.message).toMatch(message);
    });
  }
});

describe('linekeeper config check', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [...LINEKEEPER_BIN, 'config', 'check', ...args], { encoding: 'utf8' });

  it('exits 0 on the default config', () => {
    const r = run();
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/ok — site site-ravenna, line line-3/);
  });

  it('exits 78 and names file and path on a bad config', () => {
    const f = variant('cli-bad-unit', (t) => t.replace('unit: "g/min"', 'unit: "g/minn"'));
    const r = run(f);
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/cli-bad-unit\.yaml:\d+: equipment\[3\]\.tags\[0\]\.unit: unknown unit "g\/minn" .*\[LK_CONFIG_INVALID\]/s);
  });
});
