/**
 * Measurement dynamics of each equipment type, as pure step functions:
 * actuators follow their setpoints with first-order lags, the process
 * relations of src/twin/process.ts (called with the plant's hidden true
 * parameters) turn actuator states into outputs, and instruments add noise.
 * Time is process time (the simulator's time-scale applies before this).
 */
import type { Rng } from '../../src/clock.js';
import {
  blendRsdPct,
  clamp,
  coatingModel,
  DIE_STATIONS,
  dryingRatePerMin,
  firstOrder,
  pressModel,
  productTempC,
} from '../../src/twin/process.js';
import type { TrueParameters } from './truth.js';

/** A reading: scalars, or the raw data of the analyser and the cameras (feeds.ts; read-only by convention, a new array per scan). */
export type Value = number | string | boolean | Float64Array | Uint8Array;

/** What one model may see of the rest of the line (e.g. NIR sees the blender's uniformity). */
export interface LineView {
  /** Internal state of another equipment of this type, if the line has one. */
  state(type: string): Readonly<Record<string, number>> | undefined;
  /** Current setpoint of another equipment of this type. */
  setpoint(type: string, name: string): number | undefined;
}

export interface StepContext {
  readonly truth: TrueParameters;
  readonly rng: Rng;
  readonly line: LineView;
  /** Process milliseconds since the previous step (≥ 0). */
  readonly dtMs: number;
}

export interface EquipmentModel {
  /** Internal state at the start, with actuators settled at the given setpoints. */
  init(sp: Readonly<Record<string, number>>, truth: TrueParameters): Record<string, number>;
  /** Advance the state in place. */
  step(state: Record<string, number>, sp: Readonly<Record<string, number>>, ctx: StepContext): void;
  /** Instrument readings of the state (noise drawn from ctx.rng). */
  measure(state: Readonly<Record<string, number>>, sp: Readonly<Record<string, number>>, ctx: Omit<StepContext, 'dtMs'>): Record<string, Value>;
}

/** Actuator and thermal time constants, process ms. */
export const TAU_MS = {
  pressActuator: 3_000,
  coaterSpray: 5_000,
  coaterAir: 10_000,
  coaterInlet: 60_000,
  coaterThermal: 120_000,
  fluidbedInlet: 90_000,
  fluidbedAir: 10_000,
  blenderSpeed: 5_000,
  visionDefectRate: 60_000,
} as const;

const g = (sp: Readonly<Record<string, number>>, k: string, dflt = 0): number => sp[k] ?? dflt;
const s = (st: Readonly<Record<string, number>>, k: string): number => st[k] ?? 0;
const noisy = (rng: Rng, v: number, rel: number): number => v * (1 + rng.normal(0, rel));

function pressOutputs(st: Readonly<Record<string, number>>, truth: TrueParameters): ReturnType<typeof pressModel> {
  return pressModel(
    { fillDepthMm: s(st, 'fill'), mainForceKn: s(st, 'force'), preForceKn: s(st, 'pre'), turretRpm: Math.max(s(st, 'rpm'), 0.1) },
    truth.press,
  );
}

const press: EquipmentModel = {
  init: (sp) => ({ fill: g(sp, 'FillDepth'), force: g(sp, 'MainForce'), pre: g(sp, 'PreForce'), rpm: g(sp, 'TurretSpeed') }),
  step(st, sp, { dtMs }) {
    st.fill = firstOrder(s(st, 'fill'), g(sp, 'FillDepth'), dtMs, TAU_MS.pressActuator);
    st.force = firstOrder(s(st, 'force'), g(sp, 'MainForce'), dtMs, TAU_MS.pressActuator);
    st.pre = firstOrder(s(st, 'pre'), g(sp, 'PreForce'), dtMs, TAU_MS.pressActuator);
    st.rpm = firstOrder(s(st, 'rpm'), g(sp, 'TurretSpeed'), dtMs, TAU_MS.pressActuator);
  },
  measure(st, _sp, { truth, rng }) {
    const o = pressOutputs(st, truth);
    return {
      // weight scatter grows with turret speed (less time under the feed frame)
      TabletWeight: noisy(rng, o.tabletWeightMg, (truth.uniformity.weightRsd0 + truth.uniformity.weightRsdPerRpm * s(st, 'rpm')) / 100),
      Hardness: Math.max(0, noisy(rng, o.hardnessN, 0.03)),
      Thickness: noisy(rng, o.thicknessMm, 0.005),
      CappingRate: clamp(noisy(rng, o.cappingPct, 0.1), 0, 100),
      EjectionForce: Math.max(0, noisy(rng, o.ejectionForceN, 0.03)),
      DwellTime: Number.isFinite(o.dwellMs) ? o.dwellMs : 0,
      Output: o.tabletsPerHour,
    };
  },
};

function coaterSteady(st: Readonly<Record<string, number>>, truth: TrueParameters): ReturnType<typeof coatingModel> {
  return coatingModel({ sprayRateGMin: s(st, 'spray'), inletAirC: s(st, 'inlet'), airflowM3h: Math.max(s(st, 'air'), 1), panRpm: s(st, 'pan') }, truth.coating);
}

const coater: EquipmentModel = {
  init(sp, truth) {
    const st = { spray: g(sp, 'SprayRate'), inlet: g(sp, 'InletAirTemp'), air: g(sp, 'Airflow'), pan: g(sp, 'PanSpeed'), exhaust: 0, wg: 0 };
    st.exhaust = clamp(coaterSteady(st, truth).exhaustC, -20, 120);
    return st;
  },
  step(st, sp, { dtMs, truth }) {
    st.spray = firstOrder(s(st, 'spray'), g(sp, 'SprayRate'), dtMs, TAU_MS.coaterSpray);
    st.air = firstOrder(s(st, 'air'), g(sp, 'Airflow'), dtMs, TAU_MS.coaterAir);
    st.inlet = firstOrder(s(st, 'inlet'), g(sp, 'InletAirTemp'), dtMs, TAU_MS.coaterInlet);
    st.pan = g(sp, 'PanSpeed');
    const o = coaterSteady(st, truth);
    st.exhaust = firstOrder(s(st, 'exhaust'), clamp(o.exhaustC, -20, 120), dtMs, TAU_MS.coaterThermal);
    // sprayed solids only land on a moving bed
    if (s(st, 'pan') > 0) st.wg = s(st, 'wg') + o.weightGainPctPerMin * (dtMs / 60_000);
  },
  measure(st, _sp, { truth, rng }) {
    const o = coaterSteady(st, truth);
    return {
      ExhaustTemp: s(st, 'exhaust') + rng.normal(0, 0.2),
      BedTemp: s(st, 'exhaust') + 2 + rng.normal(0, 0.3),
      WeightGain: Math.max(0, s(st, 'wg') + rng.normal(0, 0.01)),
      WettingRatio: Math.max(0, noisy(rng, Number.isFinite(o.wettingRatio) ? o.wettingRatio : 100, 0.02)),
    };
  },
};

/**
 * Dew point of the fluid bed's inlet air, °C. The process air is dried by a
 * desiccant-wheel dehumidifier upstream of the heater, so its water content
 * (hence its dew point) does not depend on the inlet temperature setpoint:
 * heating does not change a dew point. Below 0 °C, which is why the register
 * is a signed int32. The small ripple is the wheel's regeneration cycle.
 * Deterministic on purpose: the new readings draw nothing from the unit's
 * noise stream, so every other measurement of a seed stays what it was.
 */
export const INLET_DEW_POINT = { meanC: -8, rippleC: 0.3, periodMin: 20 } as const;

export function inletDewPointC(processMinutes: number): number {
  const d = INLET_DEW_POINT;
  return d.meanC + d.rippleC * Math.sin((2 * Math.PI * processMinutes) / d.periodMin);
}

/**
 * Shaft power of the bin blender's drive, kW, at a speed in rev/min: lifting
 * the tumbling load takes a roughly constant torque (power ∝ speed) and
 * friction and windage add a term ∝ speed². 20 rpm → 3 kW, 35 rpm → 6 kW,
 * a 7.5 kW motor; 0 when the bin stands. Integrated into the energy meter
 * (kWh) by the step. Deterministic, as {@link inletDewPointC}.
 */
export const BLENDER_POWER = { kwPerRpm: 0.12, kwPerRpm2: 0.0015 } as const;

export function blenderMotorPowerKw(speedRpm: number): number {
  const n = Math.max(0, speedRpm);
  return BLENDER_POWER.kwPerRpm * n + BLENDER_POWER.kwPerRpm2 * n * n;
}

const fluidbed: EquipmentModel = {
  init: (sp, truth) => ({ inlet: g(sp, 'InletAirTemp'), air: g(sp, 'Airflow'), lod: truth.drying.lod0, minutes: 0 }),
  step(st, sp, { dtMs, truth }) {
    st.inlet = firstOrder(s(st, 'inlet'), g(sp, 'InletAirTemp'), dtMs, TAU_MS.fluidbedInlet);
    st.air = firstOrder(s(st, 'air'), g(sp, 'Airflow'), dtMs, TAU_MS.fluidbedAir);
    const k = dryingRatePerMin(s(st, 'inlet'), s(st, 'air'), truth.drying);
    const dtMin = dtMs / 60_000;
    // the falling-rate curve integrated piecewise, so it stays exact while the inlet temperature moves
    st.lod = truth.drying.lodEq + (s(st, 'lod') - truth.drying.lodEq) * Math.exp(-k * dtMin);
    st.minutes = s(st, 'minutes') + dtMin;
  },
  measure(st, _sp, { truth, rng }) {
    return {
      InletAirTempActual: s(st, 'inlet') + rng.normal(0, 0.2),
      ProductTemp: productTempC(s(st, 'lod'), s(st, 'inlet'), truth.drying) + rng.normal(0, 0.2),
      Lod: Math.max(0, s(st, 'lod') + rng.normal(0, 0.05)),
      DryingTime: s(st, 'minutes'),
      InletDewPoint: inletDewPointC(s(st, 'minutes')),
    };
  },
};

const blender: EquipmentModel = {
  init: () => ({ speed: 0, revs: 0, energyKwh: 0 }),
  step(st, sp, { dtMs }) {
    const done = s(st, 'revs') >= g(sp, 'TargetRevolutions', Number.POSITIVE_INFINITY);
    st.speed = firstOrder(s(st, 'speed'), done ? 0 : g(sp, 'Speed'), dtMs, TAU_MS.blenderSpeed);
    st.revs = s(st, 'revs') + Math.max(0, s(st, 'speed')) * (dtMs / 60_000);
    // the energy meter integrates the same speed the revolution counter does
    st.energyKwh = s(st, 'energyKwh') + blenderMotorPowerKw(s(st, 'speed')) * (dtMs / 3_600_000);
  },
  measure(st, _sp, { truth, rng }) {
    return {
      SpeedActual: Math.max(0, s(st, 'speed') + rng.normal(0, 0.05)),
      Revolutions: s(st, 'revs'),
      BlendRsd: Math.max(0, noisy(rng, blendRsdPct(s(st, 'revs'), truth.blend), 0.05)),
      MotorPower: blenderMotorPowerKw(s(st, 'speed')),
      MotorEnergy: s(st, 'energyKwh'),
    };
  },
};

const nir: EquipmentModel = {
  // blendTrue: the probe's true local API content of the last scan (the spectrum feed draws its spectrum from it)
  init: (_sp, truth) => ({ since: 0, scans: 0, potency: truth.nir.potencyPct, blend: 100, blendTrue: 100 }),
  step(st, sp, { dtMs, truth, rng, line }) {
    const intervalMs = Math.max(g(sp, 'ScanInterval', 10), 0.001) * 1000;
    st.since = s(st, 'since') + dtMs;
    const n = Math.floor(s(st, 'since') / intervalMs);
    if (n <= 0) return;
    st.since = s(st, 'since') - n * intervalMs;
    st.scans = (s(st, 'scans') + n) % 2 ** 32;
    st.potency = truth.nir.potencyPct + rng.normal(0, truth.nir.rmsepPct);
    // the probe sees the blend's non-uniformity: local concentration scatters by the blend RSD
    const b = line.state('blender');
    const rsd = b ? blendRsdPct(b.revs ?? 0, truth.blend) : truth.blend.rsdInf;
    const local = 100 * (1 + rng.normal(0, rsd / 100));
    st.blendTrue = local;
    st.blend = local + rng.normal(0, truth.nir.rmsepPct);
  },
  measure: (st) => ({ Potency: s(st, 'potency'), BlendConcentration: s(st, 'blend'), ScanCount: s(st, 'scans') }),
};

/** Fraction of defective tablets the cameras reject at a reject threshold (%), and of good ones they reject by mistake. */
export function visionRejectRates(thresholdPct: number): { sensitivity: number; falsePositive: number } {
  const t = clamp(thresholdPct, 0, 100) / 100;
  return { sensitivity: 1 - t ** 3, falsePositive: 0.02 * (1 - t) ** 2 };
}

const vision: EquipmentModel = {
  // capping: the press's capping % at the last step (the frame feed draws defect labels from it);
  // injectedPct: extra defects injected by a test (Plant.injectDefects), written by the plant before each step
  init: () => ({ inspected: 0, rejected: 0, rate: 0, capping: 0, injectedPct: 0 }),
  step(st, sp, { dtMs, truth, rng, line }) {
    const p = line.state('press');
    const lineFactor = (line.setpoint('plc', 'LineSpeedFactor') ?? 100) / 100;
    const perHour = p ? Math.max(p.rpm ?? 0, 0) * 60 * DIE_STATIONS * lineFactor : 0;
    const n = (perHour * dtMs) / 3_600_000;
    if (n <= 0) return;
    const capping = p ? pressOutputs(p, truth).cappingPct : 0;
    st.capping = capping;
    const defect = clamp((truth.vision.baseDefectPct + capping + s(st, 'injectedPct')) / 100, 0, 1);
    const r = visionRejectRates(g(sp, 'RejectThreshold', 50));
    const expected = n * (defect * r.sensitivity + (1 - defect) * r.falsePositive);
    const rejects = clamp(expected + rng.normal(0, Math.sqrt(expected)), 0, n);
    st.inspected = s(st, 'inspected') + n;
    st.rejected = s(st, 'rejected') + rejects;
    st.rate = firstOrder(s(st, 'rate'), (100 * rejects) / n, dtMs, TAU_MS.visionDefectRate);
  },
  measure: (st) => ({
    Inspected: Math.floor(s(st, 'inspected')) % 2 ** 32,
    Rejected: Math.floor(s(st, 'rejected')) % 2 ** 32,
    DefectRate: s(st, 'rate'),
    // one trigger (six synchronised images) per tablet
    TriggerId: Math.floor(s(st, 'inspected')) % 2 ** 32,
  }),
};

const plc: EquipmentModel = {
  init: () => ({}),
  step: () => undefined,
  measure: (_st, sp) => ({ LineRunning: g(sp, 'LineSpeedFactor', 100) > 0 }),
};

/** The model of each equipment type of the configuration schema. */
export const MODELS: Readonly<Record<string, EquipmentModel>> = Object.freeze({ press, coater, fluidbed, blender, nir, vision, plc });
