import { afterAll, describe, expect, it } from 'vitest';
import { AUTONOMY_LEVELS, type Decision, type PolicyContext, type PolicyRequest } from '../../src/domain/policy.js';
import { LkError } from '../../src/errors.js';
import { evaluate } from '../../src/policy/index.js';
import { decisionId } from '../../src/policy/evaluate.js';
import { loadPolicyBundle } from '../../src/config/policy-bundle.js';
import { CAPPING_OK, T0, TWIN_RECORD, bundle, bundleCopy, cleanupCopies, context, request, site } from './policy-helpers.js';

afterAll(cleanupCopies);

const ev = (r: Partial<PolicyRequest> = {}, c: Partial<PolicyContext> = {}): Decision => evaluate(request(r), bundle, context(c));

describe('evaluate: the textbook allow', () => {
  it('allows an attended L3 move of a low-risk setpoint inside the design space, with bundle version, id and inputs', () => {
    const d = ev();
    expect(d.outcome).toBe('allow');
    expect(d.reasons).toEqual([]);
    expect(d.bundleVersion).toBe(bundle.version);
    expect(d.valueInSetpointUnit).toBe(12.5);
    expect(d.setpointUnit).toBe('kN');
    expect(d.pendingApproval).toBe('none');
    expect(d.id).toMatch(/^dec_[0-9a-f]{32}$/);
    expect(d.inputs.request.value).toBe('12.5 kN');
    expect(d.at).toBe(T0);
  });

  it('derives the same id from the same inputs (replay) and a different one when an input changes; a caller id wins', () => {
    expect(ev().id).toBe(ev().id);
    expect(ev({}, { now: T0 + 1 }).id).not.toBe(ev().id);
    expect(ev({ value: '12.6 kN' }).id).not.toBe(ev().id);
    expect(ev({}, { attendance: null }).id).not.toBe(ev().id);
    expect(ev({}, { decisionId: 'dec_run42_0007' }).id).toBe('dec_run42_0007');
  });

  it('keeps the id of given inputs across versions: a replay years later reproduces the ids it recorded', () => {
    // pinned from the release that first stored them; a change of the hash must be a deliberate, versioned one
    const inputs = [
      { request: { agent: 'agent.compress_fill', setpoint: 'press.MainForce', value: '12.5 kN', product: 'ir-family-a', tooling: 'round-10mm-ff' }, context: { now: 1772524800000, batchState: 'running', current: 12, lastMove: { value: 12, at: 1772524740000 }, reviewer: 'p.bianchi', attendance: { operator: 'l.verdi', lastPresenceAt: 1772524790000 } } },
      { request: { kind: 'setpoint', agent: 'agent.coat_dry', setpoint: 'coater.SprayRate', value: { value: 183.27, unit: 'g/min' }, product: 'ir-family-b', tooling: 'round-10mm-ff' }, context: { now: 1772524800001, batchState: 'running', current: null, model: { id: 'process-twin-v1', version: '1' }, modelRecord: { owner: 'acme-pharma', family: 'twin', version: 1, status: 'validated', sha256: 'ab'.repeat(32), sites: ['site-ravenna'] }, approval: { kind: 'qa', by: 'm.rossi', role: 'qa_reviewer' }, capping: { risk: 0.012, model: { id: 'process-twin-v1', version: '1' } } } },
      { request: { agent: 'agent.defect_inspect', setpoint: 'vision.RejectThreshold', value: 'NaN %', product: 'ir-family-a', tooling: 'round-10mm-ff' }, context: { now: 0, batchState: 'held', current: 75, capping: { error: 'LK_TWIN_DIVERGED' } } },
    ] as unknown as Decision['inputs'][];
    expect(inputs.map((x) => decisionId(x, 'f'.repeat(64)))).toEqual(['dec_3d7df3e6339747f94e509ef0b608259a', 'dec_e0a80571867583f74ec9b806df917e69', 'dec_2711f07bc18febf8e8dac483122ec1e2']);
    // a string longer than the scratch buffer takes the slow path and still hashes every character
    const long = { ...inputs[0]!, request: { ...inputs[0]!.request, agent: 'a'.repeat(5000) } } as Decision['inputs'];
    const longer = { ...inputs[0]!, request: { ...inputs[0]!.request, agent: `${'a'.repeat(4999)}b` } } as Decision['inputs'];
    expect(decisionId(long, 'f'.repeat(64))).not.toBe(decisionId(longer, 'f'.repeat(64)));
  });

  it('refuses to decide without a usable clock reading (LK_VALIDATION), rather than guessing the time', () => {
    let code: string | undefined;
    try {
      ev({}, { now: Number.NaN });
    } catch (e) {
      code = LkError.is(e) ? e.code : undefined;
    }
    expect(code).toBe('LK_VALIDATION');
  });
});

describe('[R7] allow-list at call time', () => {
  it('[ERR-ALLOW-LIST] denies a setpoint outside the agent allow-list and an unknown agent', () => {
    expect(ev({ agent: 'agent.coat_dry' })).toMatchObject({ outcome: 'deny', reasons: expect.arrayContaining(['NOT_IN_ALLOW_LIST']) });
    expect(ev({ agent: 'agent.rogue' }).reasons).toEqual(expect.arrayContaining(['AGENT_UNKNOWN', 'NOT_IN_ALLOW_LIST']));
    expect(ev({ agent: 'agent.orchestrator' }).outcome).toBe('deny');
  });

  it('[ERR-ALLOW-LIST] follows the bundle in force: removing the setpoint from the allow-list turns the same request into a deny', () => {
    const dir = bundleCopy({ 'agents.yaml': (t) => t.replace('allow: [press.FillDepth, press.MainForce, press.PreForce, press.TurretSpeed]', 'allow: [press.FillDepth, press.PreForce, press.TurretSpeed]') });
    const narrowed = loadPolicyBundle(dir, { site }).bundle;
    expect(evaluate(request(), narrowed, context()).reasons).toContain('NOT_IN_ALLOW_LIST');
    expect(ev().outcome).toBe('allow');
  });

  it('denies unknown tags, tags without approved limits for the product × tooling, and unknown product families', () => {
    expect(ev({ setpoint: 'press.MainFoce' }).reasons).toContain('TAG_UNKNOWN');
    expect(ev({ setpoint: 'press.Hardness' }).reasons).toContain('TAG_UNKNOWN');
    expect(ev({ product: 'ir-family-z' }).reasons).toContain('DESIGN_SPACE_UNKNOWN');
  });
});

describe('design space and validated parameters wait for QA', () => {
  it('[R4] [ERR-OUTSIDE-DESIGN-SPACE] [LIM-SETPOINT-BOUNDS] a move outside the approved range is needs_qa at every level that may propose it, never allow', () => {
    for (const level of ['L2', 'L3'] as const) {
      const d = ev({ value: '18.5 kN' }, { current: 18, lastMove: null, autonomy: { agent: level } });
      expect(d.outcome).toBe('needs_qa');
      expect(d.reasons).toContain('OUTSIDE_DESIGN_SPACE');
      expect(d.pendingApproval).toBe('qa');
    }
  });

  it('[R4] [ERR-OUTSIDE-DESIGN-SPACE] a QA approval bound to the move lets it through; a reviewer approval or a QA approval from a wrong role does not', () => {
    const c = { current: 18, lastMove: null };
    expect(ev({ value: '18.5 kN' }, { ...c, approval: { by: 'q.russo', role: 'qa_reviewer', kind: 'qa' } })).toMatchObject({ outcome: 'allow', reasons: ['OUTSIDE_DESIGN_SPACE', 'QA_APPROVED'] });
    expect(ev({ value: '18.5 kN' }, { ...c, approval: { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' } }).outcome).toBe('needs_qa');
    expect(ev({ value: '18.5 kN' }, { ...c, approval: { by: 'p.costa', role: 'process_engineer', kind: 'qa' } })).toMatchObject({ outcome: 'deny', reasons: expect.arrayContaining(['APPROVAL_ROLE_INVALID']) });
  });

  it('[R4] [ERR-VALIDATED-PARAMETER] any change to a validated parameter waits for QA, even inside the design space', () => {
    const d = evaluate(
      request({ agent: 'agent.granulate_dry', setpoint: 'fluidbed.InletAirTemp', value: '60 Cel' }),
      bundle,
      context({ model: undefined, autonomy: { agent: 'L2' }, current: 59, lastMove: null }),
    );
    expect(d.outcome).toBe('needs_qa');
    expect(d.reasons).toContain('VALIDATED_PARAMETER');
    expect(d.reasons).not.toContain('OUTSIDE_DESIGN_SPACE');
  });

  it('[ERR-RELEASE-HELD] a batch release is needs_qa whatever the level, attendance or approvals [R3]', () => {
    for (const level of AUTONOMY_LEVELS) {
      const d = ev({ kind: 'release' }, { autonomy: { agent: level, setpoint: level }, approval: { by: 'q.russo', role: 'qa_reviewer', kind: 'qa' } });
      expect(d.outcome).toBe('needs_qa');
      expect(d.reasons).toContain('BATCH_RELEASE_NEEDS_QA');
    }
  });
});

describe('[R5] no unattended level', () => {
  it('L2/L3 without an attended operator fall to recommend_only (UNATTENDED)', () => {
    expect(ev({}, { attendance: null })).toMatchObject({ outcome: 'recommend_only', reasons: ['UNATTENDED'] });
    expect(ev({}, { attendance: { operator: 'l.verdi', lastPresenceAt: T0 - 121_000 } }).reasons).toEqual(['UNATTENDED']);
    expect(ev({}, { attendance: { operator: '', lastPresenceAt: T0 } }).outcome).toBe('recommend_only');
    expect(ev({}, { autonomy: { agent: 'L2' }, attendance: null }).reasons).toContain('UNATTENDED');
  });

  it('a heartbeat exactly one window old still counts; a heartbeat from the future does not', () => {
    expect(ev({}, { attendance: { operator: 'l.verdi', lastPresenceAt: T0 - 120_000 } }).outcome).toBe('allow');
    expect(ev({}, { attendance: { operator: 'l.verdi', lastPresenceAt: T0 + 60_000 } }).outcome).toBe('recommend_only');
  });
});

describe('[R6] batch state, model version, reviewer assignment before any move', () => {
  it('denies outside a writable batch state', () => {
    for (const s of ['hold', 'complete', 'released', '']) expect(ev({}, { batchState: s }).reasons).toContain('BATCH_STATE_FORBIDS');
    expect(ev({}, { batchState: 'setup' }).outcome).toBe('allow');
  });

  it('denies a model that is missing, not the validated version, or not pinned to this site (the registry\'s record at call time)', () => {
    expect(ev({}, { model: undefined }).reasons).toContain('MODEL_MISSING');
    expect(ev({}, { model: { id: 'process-twin-v1', version: '1.0.1-rc1' } }).reasons).toContain('MODEL_NOT_VALIDATED');
    expect(ev({}, { model: { id: 'process-twin-v1', version: '2' } }).reasons).toContain('MODEL_NOT_VALIDATED');
    expect(ev({}, { modelRecord: { ...TWIN_RECORD, sites: ['site-lisbon'] } }).reasons).toContain('MODEL_NOT_PINNED');
    expect(ev({}, { model: { id: 'unheard-of-v1', version: '1' }, modelRecord: null }).reasons).toContain('MODEL_MISSING');
  });

  it('denies a draft, shadow or retired model, another tenant\'s, and one of another family than the agent\'s bundle entry names', () => {
    const cases: [Partial<PolicyContext>, string][] = [
      [{ modelRecord: { ...TWIN_RECORD, status: 'draft' } }, 'MODEL_NOT_VALIDATED'],
      [{ modelRecord: { ...TWIN_RECORD, status: 'shadow' } }, 'MODEL_NOT_VALIDATED'],
      [{ modelRecord: { ...TWIN_RECORD, status: 'retired' } }, 'MODEL_RETIRED'],
      [{ modelRecord: { owner: 'other_tenant' } }, 'MODEL_TENANT'],
      [{ model: { id: 'potency-pls-v1', version: '1' }, modelRecord: { ...TWIN_RECORD, family: 'potency-pls' } }, 'MODEL_NOT_PINNED'],
      [{ modelRecord: undefined }, 'MODEL_MISSING'],
    ];
    for (const [c, reason] of cases) {
      const d = ev({}, c);
      expect(d.outcome, reason).toBe('deny');
      expect(d.reasons, reason).toContain(reason);
    }
    // an agent whose bundle entry names no family may still not act on a model that is not validated
    expect(ev({ agent: 'agent.yield_takt', setpoint: 'press.TurretSpeed', value: '41 {rev}/min' }, { current: 40, modelRecord: { ...TWIN_RECORD, status: 'draft' } }).reasons).toContain('MODEL_NOT_VALIDATED');
    expect(ev({ agent: 'agent.yield_takt', setpoint: 'press.TurretSpeed', value: '41 {rev}/min' }, { current: 40, model: undefined }).outcome).toBe('allow');
  });

  it('an L2 proposal waits for a named reviewer and says when none is assigned', () => {
    const d = ev({}, { autonomy: { agent: 'L2' }, reviewer: null });
    expect(d).toMatchObject({ outcome: 'recommend_only', pendingApproval: 'reviewer' });
    expect(d.reasons).toEqual(expect.arrayContaining(['APPROVAL_REQUIRED', 'NO_REVIEWER_ASSIGNED']));
  });

  it('[LIM-CAPPING] denies a compression move whose predicted capping risk is over the site threshold', () => {
    expect(ev({}, { capping: { ...CAPPING_OK, risk: 0.02 } }).reasons).toContain('CAPPING_RISK_TOO_HIGH');
    expect(ev({}, { capping: { ...CAPPING_OK, risk: 0.02 } }).outcome).toBe('deny');
    expect(ev({}, { capping: { ...CAPPING_OK, risk: 0.01 } }).outcome).toBe('allow');
  });

  it('[LIM-CAPPING] denies a compression move whose capping risk is unknown: none computed, no twin, or not finite (fail closed)', () => {
    const unknown: Partial<PolicyContext>[] = [
      { capping: undefined },
      { capping: null },
      { capping: { risk: null, model: null, error: 'LK_MODEL_NOT_VALIDATED' } },
      { capping: { ...CAPPING_OK, risk: Number.NaN } },
      { capping: { ...CAPPING_OK, risk: Number.POSITIVE_INFINITY } },
    ];
    for (const c of unknown) {
      const d = ev({}, c);
      expect(d.outcome).toBe('deny');
      expect(d.reasons).toEqual(['CAPPING_RISK_UNKNOWN']);
    }
    // the capping risk is a press input only: a coating move neither needs nor uses one
    const coat = evaluate(
      request({ agent: 'agent.coat_dry', setpoint: 'coater.SprayRate', value: '110 g/min' }),
      bundle,
      context({ model: undefined, autonomy: { agent: 'L3' }, current: 100, lastMove: null, capping: undefined }),
    );
    expect(coat.outcome).toBe('allow');
  });
});

describe('step, rate and instrument limits', () => {
  it('denies a step larger than the maximum, and a move whose current value is unknown', () => {
    expect(ev({ value: '13.6 kN' }, { lastMove: null }).reasons).toEqual(['STEP_TOO_LARGE']);
    expect(ev({ value: '13.5 kN' }, { lastMove: null }).outcome).toBe('allow');
    expect(ev({}, { current: null }).reasons).toEqual(['CURRENT_VALUE_UNKNOWN']);
    expect(ev({}, { current: Number.NaN }).reasons).toEqual(['CURRENT_VALUE_UNKNOWN']);
  });

  it('denies a rate of change above the maximum since the last move (3 kN/min here)', () => {
    expect(ev({}, { lastMove: { value: 12, at: T0 - 10_000 } }).outcome).toBe('allow'); // 0.5 kN in 10 s = 3 kN/min
    expect(ev({}, { lastMove: { value: 12, at: T0 - 9_000 } }).reasons).toEqual(['RATE_TOO_HIGH']);
    expect(ev({}, { lastMove: { value: 12, at: T0 } }).reasons).toEqual(['RATE_TOO_HIGH']);
  });

  it('[LIM-SETPOINT-BOUNDS] denies a value outside the instrument range outright (it cannot be a QA decision)', () => {
    const d = ev({ value: '45 kN' }, { current: 44, lastMove: null });
    expect(d.outcome).toBe('deny');
    expect(d.reasons).toEqual(expect.arrayContaining(['OUTSIDE_INSTRUMENT_RANGE', 'OUTSIDE_DESIGN_SPACE']));
  });
});

describe('units and value hygiene', () => {
  it('converts a compatible unit (12500 N, {value, unit}, a bare number in the tag unit)', () => {
    expect(ev({ value: '12500 N' })).toMatchObject({ outcome: 'allow', valueInSetpointUnit: 12.5 });
    expect(ev({ value: { value: 12_500_000, unit: 'mN' } }).outcome).toBe('allow');
    expect(ev({ value: 12.5 }).outcome).toBe('allow');
    const lim = bundle.designSpace.approved('ir-family-a', 'round-10mm-ff').setpoints['press.MainForce']!;
    expect(ev({ value: `${lim.max * 1000} N` }, { current: lim.max, lastMove: null }).outcome).toBe('allow'); // the bound itself, in another unit
  });

  it('converts temperatures with their offset: 140 [degF] is 60 Cel', () => {
    const d = evaluate(
      request({ agent: 'agent.coat_dry', setpoint: 'coater.InletAirTemp', value: '140 [degF]' }),
      bundle,
      context({ model: undefined, autonomy: { agent: 'L2' }, current: 59, lastMove: null, approval: { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' } }),
    );
    expect(d.valueInSetpointUnit).toBeCloseTo(60, 9);
    expect(d.outcome).toBe('allow');
  });

  it('denies incompatible, unknown and missing units, NaN, Infinity, non-numbers', () => {
    const cases: [unknown, string][] = [
      ['12.5 Cel', 'UNIT_INCOMPATIBLE'],
      ['12.5 mm', 'UNIT_INCOMPATIBLE'],
      ['12.5 kNN', 'UNIT_UNKNOWN'],
      ['12.5', 'UNIT_UNKNOWN'],
      [{ value: 12.5, unit: 42 }, 'UNIT_UNKNOWN'],
      [Number.NaN, 'VALUE_NOT_FINITE'],
      [Number.POSITIVE_INFINITY, 'VALUE_NOT_FINITE'],
      ['NaN kN', 'VALUE_NOT_FINITE'],
      ['-Infinity kN', 'VALUE_NOT_FINITE'],
      ['1e400 kN', 'VALUE_NOT_FINITE'],
      ['twelve kN', 'VALUE_NOT_NUMERIC'],
      ['', 'VALUE_NOT_NUMERIC'],
      [true, 'VALUE_NOT_NUMERIC'],
      [null, 'VALUE_NOT_NUMERIC'],
      [[12.5], 'VALUE_NOT_NUMERIC'],
      [{ value: '12.5', unit: 'kN' }, 'VALUE_NOT_NUMERIC'],
      [{ value: Number.NaN, unit: 'kN' }, 'VALUE_NOT_FINITE'],
    ];
    for (const [value, reason] of cases) {
      const d = evaluate({ ...request(), value: value as PolicyRequest['value'] }, bundle, context());
      expect(d.outcome, JSON.stringify(value)).toBe('deny');
      expect(d.reasons, JSON.stringify(value)).toContain(reason);
      expect(d.valueInSetpointUnit).toBeNull();
    }
  });

  it('compiles a first-seen unit pair once and then reuses it', () => {
    ev({ value: '12 500 000 mN'.replace(/ /g, '') });
    const n = bundle.index.cached.n;
    for (let i = 0; i < 50; i++) ev({ value: `${12_000_000 + i} mN` });
    expect(bundle.index.cached.n).toBe(n);
    expect(bundle.index.conversions.get('kN')?.get('mN')).toMatchObject({ kind: 'ok' });
  });
});

describe('autonomy rows: checks identical at every level, only the outcome differs', () => {
  const rows: [string, Partial<PolicyContext>, Decision['outcome'], Decision['pendingApproval'], string[]][] = [
    ['L0 shadow: observes, writes nothing', { autonomy: { agent: 'L0' } }, 'recommend_only', 'none', ['AUTONOMY_RECOMMEND_ONLY']],
    ['L1 assist: recommends; the engineer enters the move', { autonomy: { agent: 'L1' } }, 'recommend_only', 'none', ['AUTONOMY_RECOMMEND_ONLY']],
    ['L2 supervised: executes on approval', { autonomy: { agent: 'L2' } }, 'recommend_only', 'reviewer', ['APPROVAL_REQUIRED']],
    ['L2 approved in the console by the assigned reviewer', { autonomy: { agent: 'L2' }, approval: { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' } }, 'allow', 'none', ['REVIEWER_APPROVED']],
    ['L2 approved by someone with the role who is not the assigned reviewer', { autonomy: { agent: 'L2' }, approval: { by: 'p.costa', role: 'process_engineer', kind: 'reviewer' } }, 'deny', 'none', ['APPROVER_NOT_ASSIGNED']],
    ['L2 approved while no reviewer is assigned to the batch', { autonomy: { agent: 'L2' }, reviewer: null, approval: { by: 'a.bianchi', role: 'process_engineer', kind: 'reviewer' } }, 'deny', 'none', ['APPROVER_NOT_ASSIGNED']],
    ['L3 bounded: moves a low-risk setpoint', { autonomy: { agent: 'L3' } }, 'allow', 'none', []],
  ];
  for (const [name, c, outcome, pending, reasons] of rows) {
    it(name, () => {
      const d = ev({}, c);
      expect(d.outcome).toBe(outcome);
      expect(d.pendingApproval).toBe(pending);
      expect(d.reasons).toEqual(reasons);
    });
  }

  it('L3 on a setpoint that is not low-risk behaves like L2', () => {
    const d = evaluate(
      request({ agent: 'agent.coat_dry', setpoint: 'coater.InletAirTemp', value: '60 Cel' }),
      bundle,
      context({ model: undefined, autonomy: { agent: 'L3', setpoint: 'L3' }, current: 59, lastMove: null }),
    );
    expect(d).toMatchObject({ outcome: 'recommend_only', pendingApproval: 'reviewer', autonomy: 'L3' });
    expect(d.reasons).toEqual(expect.arrayContaining(['NOT_LOW_RISK', 'APPROVAL_REQUIRED']));
  });

  it('the effective level is the lower of agent and setpoint (plc.LineSpeedFactor is capped at L1)', () => {
    const d = ev({ agent: 'agent.yield_takt', setpoint: 'plc.LineSpeedFactor', value: '95 %' }, { model: undefined, current: 92, lastMove: null, autonomy: { agent: 'L3' } });
    expect(d).toMatchObject({ outcome: 'recommend_only', autonomy: 'L1', reasons: ['AUTONOMY_RECOMMEND_ONLY'] });
  });

  it('the same bad request gets the same deny reasons at every level', () => {
    const sets = AUTONOMY_LEVELS.map((l) => ev({ value: '14 kN' }, { autonomy: { agent: l }, batchState: 'hold' }));
    for (const d of sets) {
      expect(d.outcome).toBe('deny');
      expect(d.reasons).toEqual(sets[0]!.reasons);
    }
    expect(sets[0]!.reasons).toEqual(expect.arrayContaining(['STEP_TOO_LARGE', 'BATCH_STATE_FORBIDS']));
  });
});
