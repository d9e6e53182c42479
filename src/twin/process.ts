/**
 * Published process relations of an immediate-release tablet line, as pure
 * functions of setpoints and parameters. The plant simulator calls them with
 * hidden "true" parameters (nominal, perturbed by a seed); the twin fits the
 * parameters to recorded batches and rehearses candidates with the fitted ones.
 *
 * Units are stated in every name or comment: kN, mm, MPa, mg, N, ms, %, °C, min.
 * References: Heckel (1961), Ryshkewitch (1953) / Duckworth (1953),
 * Fell & Newton (1970), Weibull dissolution (Langenbucher 1972),
 * Moore & Flanner f2 (FDA 1997), USP <905>.
 */

// ───────────────────────────── compression ─────────────────────────────

export interface PressParams {
  /** Punch/die diameter, mm. */
  punchDiameterMm: number;
  /** Bulk density of the granulate in the die, g/cm³. */
  bulkDensity: number;
  /** True density of the formulation, g/cm³. */
  trueDensity: number;
  /** Fill fraction at zero turret speed and its fall per rpm (shorter time under the feed frame). */
  fillFraction0: number;
  fillSpeedCoeff: number;
  /** Heckel: ln(1/ε) = K·P + A, K = 1/Py in 1/MPa. */
  heckelK: number;
  heckelA: number;
  /** Ryshkewitch–Duckworth: σ = σ0·e^(−b·ε), σ0 in MPa. */
  sigma0: number;
  rdB: number;
  /** Pitch circle diameter, m, and flat punch-head length, mm (dwell time). */
  pcdM: number;
  flatMm: number;
  /** Logistic capping surrogate: z = c0 + cForce·F + cDwell·(10 ms / dwell) − cPre·(pre/main). */
  capC0: number;
  capForce: number;
  capDwell: number;
  capPre: number;
  /** Ejection force N = e0 + eForce·F(kN). */
  ejection0: number;
  ejectionForce: number;
}

export const NOMINAL_PRESS: Readonly<PressParams> = Object.freeze({
  punchDiameterMm: 10,
  bulkDensity: 0.5,
  trueDensity: 1.5,
  fillFraction0: 0.97,
  fillSpeedCoeff: 0.0015,
  heckelK: 1 / 100,
  heckelA: 0.35,
  sigma0: 10,
  rdB: 9,
  pcdM: 0.35,
  flatMm: 10,
  capC0: -7.9,
  capForce: 0.25,
  capDwell: 1.5,
  capPre: 10,
  ejection0: 100,
  ejectionForce: 25,
});

export interface PressSetpoints {
  /** Fill depth, mm (6–12). */
  fillDepthMm: number;
  /** Main compression force, kN (5–25). */
  mainForceKn: number;
  /** Pre-compression force, kN (1–5). */
  preForceKn: number;
  /** Turret speed, rpm (20–80). */
  turretRpm: number;
}

export interface PressOutputs {
  /** Compaction pressure, MPa. */
  pressureMpa: number;
  /** Out-of-die porosity, fraction. */
  porosity: number;
  tensileStrengthMpa: number;
  tabletWeightMg: number;
  thicknessMm: number;
  /** Diametral breaking force (hardness), N. */
  hardnessN: number;
  dwellMs: number;
  /** Predicted capping, % of tablets. */
  cappingPct: number;
  ejectionForceN: number;
  /** Output, tablets per hour (one station set; see `stations`). */
  tabletsPerHour: number;
}

export const DIE_STATIONS = 36;

/** Die (punch face) area in mm² for a flat round punch. */
export function dieAreaMm2(diameterMm: number): number {
  return (Math.PI * diameterMm * diameterMm) / 4;
}

/** Compaction pressure P = F / (π·d²/4), in MPa for F in kN and d in mm. */
export function compactionPressureMpa(forceKn: number, diameterMm: number): number {
  return (forceKn * 1000) / dieAreaMm2(diameterMm);
}

/** Heckel relation: porosity ε = e^−(K·P + A). */
export function heckelPorosity(pressureMpa: number, k: number, a: number): number {
  return Math.exp(-(k * pressureMpa + a));
}

/** Ryshkewitch–Duckworth tensile strength σ = σ0·e^(−b·ε), MPa. */
export function tensileStrengthMpa(porosity: number, sigma0: number, b: number): number {
  return sigma0 * Math.exp(-b * porosity);
}

/** Fell–Newton diametral breaking force of a flat-faced tablet: F = σ·π·D·t/2, N (σ MPa, D and t mm). */
export function breakingForceN(sigmaMpa: number, diameterMm: number, thicknessMm: number): number {
  return (sigmaMpa * Math.PI * diameterMm * thicknessMm) / 2;
}

/** Dwell time t_d = flat / linear punch speed, ms; linear speed = π·PCD·rpm/60. */
export function dwellTimeMs(turretRpm: number, pcdM: number, flatMm: number): number {
  const speedMs = (Math.PI * pcdM * turretRpm) / 60; // m/s
  return speedMs > 0 ? flatMm / speedMs : Number.POSITIVE_INFINITY; // mm / (m/s) = ms
}

/** Fill fraction of the die, falling with turret speed. */
export function fillFraction(turretRpm: number, p: Pick<PressParams, 'fillFraction0' | 'fillSpeedCoeff'>): number {
  return clamp(p.fillFraction0 - p.fillSpeedCoeff * turretRpm, 0.3, 1);
}

/** Tablet weight W = ρ_bulk · fill depth · die area · f_fill, mg. */
export function tabletWeightMg(s: Pick<PressSetpoints, 'fillDepthMm' | 'turretRpm'>, p: PressParams): number {
  const volumeCm3 = (s.fillDepthMm * dieAreaMm2(p.punchDiameterMm)) / 1000;
  return volumeCm3 * p.bulkDensity * fillFraction(s.turretRpm, p) * 1000;
}

/** Logistic capping surrogate, % of tablets capped. */
export function cappingRiskPct(s: PressSetpoints, dwellMs: number, p: PressParams): number {
  const ratio = s.mainForceKn > 0 ? s.preForceKn / s.mainForceKn : 0;
  const z = p.capC0 + p.capForce * s.mainForceKn + p.capDwell * (10 / dwellMs) - p.capPre * ratio;
  return 100 / (1 + Math.exp(-z));
}

/** Steady-state press outputs for a setpoint vector. */
export function pressModel(s: PressSetpoints, p: PressParams = NOMINAL_PRESS): PressOutputs {
  const pressureMpa = compactionPressureMpa(s.mainForceKn, p.punchDiameterMm);
  const porosity = heckelPorosity(pressureMpa, p.heckelK, p.heckelA);
  const sigma = tensileStrengthMpa(porosity, p.sigma0, p.rdB);
  const weight = tabletWeightMg(s, p);
  const volumeMm3 = weight / (p.trueDensity * (1 - porosity)); // mg / (g/cm³) = mm³
  const thicknessMm = volumeMm3 / dieAreaMm2(p.punchDiameterMm);
  const dwellMs = dwellTimeMs(s.turretRpm, p.pcdM, p.flatMm);
  return {
    pressureMpa,
    porosity,
    tensileStrengthMpa: sigma,
    tabletWeightMg: weight,
    thicknessMm,
    hardnessN: breakingForceN(sigma, p.punchDiameterMm, thicknessMm),
    dwellMs,
    cappingPct: cappingRiskPct(s, dwellMs, p),
    ejectionForceN: p.ejection0 + p.ejectionForce * s.mainForceKn,
    tabletsPerHour: s.turretRpm * 60 * DIE_STATIONS,
  };
}

// ───────────────────────────── blending ─────────────────────────────

export interface BlendParams {
  /** RSD at the start and the asymptote, %. */
  rsd0: number;
  rsdInf: number;
  /** Decay per revolution. */
  kPerRev: number;
}

export const NOMINAL_BLEND: Readonly<BlendParams> = Object.freeze({ rsd0: 30, rsdInf: 1.5, kPerRev: 0.015 });

/** Blend uniformity RSD(n) = RSD∞ + (RSD0 − RSD∞)·e^(−k·n), %. */
export function blendRsdPct(revolutions: number, p: BlendParams = NOMINAL_BLEND): number {
  return p.rsdInf + (p.rsd0 - p.rsdInf) * Math.exp(-p.kPerRev * Math.max(0, revolutions));
}

// ───────────────────────────── fluid-bed drying ─────────────────────────────

export interface DryingParams {
  /** Initial and equilibrium loss on drying, % w/w. */
  lod0: number;
  lodEq: number;
  /** Rate constant at T_ref and nominal airflow, 1/min. */
  kRef: number;
  tRefC: number;
  /** Activation energy, J/mol. */
  eaJmol: number;
  /** Rate scales with (airflow/airflowRef)^airflowExp. */
  airflowRef: number;
  airflowExp: number;
  /** Wet-bulb-like product temperature during constant/falling rate, °C. */
  wetBulbC: number;
}

export const NOMINAL_DRYING: Readonly<DryingParams> = Object.freeze({
  lod0: 20,
  lodEq: 1.0,
  kRef: 0.08,
  tRefC: 60,
  eaJmol: 40_000,
  airflowRef: 250,
  airflowExp: 0.5,
  wetBulbC: 30,
});

const R_GAS = 8.314;

/** Arrhenius rate constant k(T) = k_ref·exp(−(Ea/R)(1/T − 1/T_ref)) · airflow factor, 1/min. */
export function dryingRatePerMin(inletC: number, airflowM3h: number, p: DryingParams = NOMINAL_DRYING): number {
  const t = inletC + 273.15;
  const tRef = p.tRefC + 273.15;
  const arr = Math.exp(-(p.eaJmol / R_GAS) * (1 / t - 1 / tRef));
  return p.kRef * arr * Math.pow(Math.max(airflowM3h, 0) / p.airflowRef, p.airflowExp);
}

/** Falling-rate moisture LOD(t) = LODe + (LOD0 − LODe)·e^(−k·t), % w/w. */
export function lodPct(minutes: number, k: number, p: DryingParams = NOMINAL_DRYING): number {
  return p.lodEq + (p.lod0 - p.lodEq) * Math.exp(-k * Math.max(0, minutes));
}

/** Product temperature climbs from wet-bulb toward the inlet temperature as the bed dries (end-point cue). */
export function productTempC(lod: number, inletC: number, p: DryingParams = NOMINAL_DRYING): number {
  const wetFraction = clamp((lod - p.lodEq) / (p.lod0 - p.lodEq), 0, 1);
  return p.wetBulbC + (inletC - p.wetBulbC) * (1 - Math.sqrt(wetFraction));
}

/** Minutes to reach a target LOD. */
export function dryingTimeMin(targetLod: number, k: number, p: DryingParams = NOMINAL_DRYING): number {
  if (targetLod <= p.lodEq) return Number.POSITIVE_INFINITY;
  return Math.log((p.lod0 - p.lodEq) / (targetLod - p.lodEq)) / k;
}

// ───────────────────────────── film coating ─────────────────────────────

export interface CoatingParams {
  /** Coating solids fraction of the suspension. */
  solids: number;
  /** Coating efficiency (fraction of sprayed solids on the tablets). */
  efficiency: number;
  /** Core batch mass, kg. */
  coreMassKg: number;
  /** Heat-loss coefficient of the pan to ambient (fraction of inlet–ambient difference). */
  heatLoss: number;
  ambientC: number;
  /** Exhaust temperature below which the bed over-wets, and the ratio of evaporative load to capacity that spray-dries. */
  overwetExhaustC: number;
  sprayDryRatio: number;
}

export const NOMINAL_COATING: Readonly<CoatingParams> = Object.freeze({
  solids: 0.15,
  efficiency: 0.9,
  coreMassKg: 50,
  heatLoss: 0.25,
  ambientC: 20,
  overwetExhaustC: 37,
  sprayDryRatio: 0.35,
});

export interface CoatingSetpoints {
  sprayRateGMin: number;
  inletAirC: number;
  airflowM3h: number;
  panRpm: number;
}

export interface CoatingOutputs {
  exhaustC: number;
  bedC: number;
  /** Weight gain rate, % per minute. */
  weightGainPctPerMin: number;
  /** Evaporative load over drying capacity: > 1 over-wets, < sprayDryRatio spray-dries. */
  wettingRatio: number;
  overwetRisk: number;
  sprayDryRisk: number;
}

const CP_AIR = 1005; // J/(kg·K)
const RHO_AIR = 1.2; // kg/m³
const LATENT_WATER = 2.4e6; // J/kg

/** Energy balance of the coating pan: exhaust temperature, weight-gain rate and wetting risks. */
export function coatingModel(s: CoatingSetpoints, p: CoatingParams = NOMINAL_COATING): CoatingOutputs {
  const airKgS = (s.airflowM3h * RHO_AIR) / 3600;
  const evapW = (s.sprayRateGMin / 1000 / 60) * (1 - p.solids) * LATENT_WATER;
  const capacityWK = airKgS * CP_AIR;
  const exhaustC = s.inletAirC - (capacityWK > 0 ? evapW / capacityWK : Number.POSITIVE_INFINITY) - p.heatLoss * (s.inletAirC - p.ambientC);
  const capacityW = capacityWK * Math.max(s.inletAirC - p.overwetExhaustC - p.heatLoss * (s.inletAirC - p.ambientC), 1e-6);
  const wettingRatio = evapW / capacityW;
  return {
    exhaustC,
    bedC: exhaustC + 2,
    weightGainPctPerMin: (s.sprayRateGMin * p.solids * p.efficiency * 100) / (p.coreMassKg * 1000),
    wettingRatio,
    overwetRisk: logistic((wettingRatio - 1) * 8),
    sprayDryRisk: logistic((p.sprayDryRatio - wettingRatio) * 15),
  };
}

// ───────────────────────────── dissolution and content uniformity ─────────────────────────────

export interface WeibullParams {
  qMax: number;
  tLagMin: number;
  tauMin: number;
  beta: number;
}

/** Weibull dissolution Q(t) = Qmax·(1 − e^(−((t − t_lag)/τ)^β)), % released. */
export function weibullReleasePct(tMin: number, w: WeibullParams): number {
  if (tMin <= w.tLagMin) return 0;
  return w.qMax * (1 - Math.exp(-Math.pow((tMin - w.tLagMin) / w.tauMin, w.beta)));
}

export interface DissolutionParams {
  tau0Min: number;
  /** τ grows with tensile strength (per MPa) and coat weight gain (per %). */
  tauPerMpa: number;
  tauPerWg: number;
  beta: number;
  qMax: number;
  tLagMin: number;
}

export const NOMINAL_DISSOLUTION: Readonly<DissolutionParams> = Object.freeze({
  tau0Min: 3,
  tauPerMpa: 0.25,
  tauPerWg: 0.1,
  beta: 0.9,
  qMax: 100,
  tLagMin: 0,
});

/** Dissolution surrogate: Weibull parameters from tensile strength and weight gain. */
export function dissolutionWeibull(tensileMpa: number, weightGainPct: number, p: DissolutionParams = NOMINAL_DISSOLUTION): WeibullParams {
  return {
    qMax: p.qMax,
    tLagMin: p.tLagMin,
    tauMin: p.tau0Min * Math.exp(p.tauPerMpa * tensileMpa) * (1 + p.tauPerWg * weightGainPct),
    beta: p.beta,
  };
}

/** f2 = 50·log10(100 / √(1 + (1/n)·Σ(R_t − T_t)²)); ≥ 50 means similar. */
export function f2Similarity(reference: readonly number[], test: readonly number[]): number {
  if (reference.length !== test.length || reference.length === 0) throw new RangeError('f2 needs two profiles of the same non-zero length');
  let ss = 0;
  for (let i = 0; i < reference.length; i++) ss += (reference[i]! - test[i]!) ** 2;
  return 50 * Math.log10(100 / Math.sqrt(1 + ss / reference.length));
}

/**
 * USP <905> acceptance value AV = |M − X̄| + k·s (X̄ and s in % label claim).
 * Stage 1: n = 10, k = 2.4; stage 2: n = 30, k = 2.0. M = X̄ inside 98.5–101.5, else the nearer bound.
 */
export function acceptanceValue(units: readonly number[]): { mean: number; sd: number; m: number; k: number; av: number } {
  const n = units.length;
  if (n < 2) throw new RangeError('AV needs at least two units');
  const mean = units.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(units.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1));
  const k = n >= 30 ? 2.0 : 2.4;
  const m = mean < 98.5 ? 98.5 : mean > 101.5 ? 101.5 : mean;
  return { mean, sd, m, k, av: Math.abs(m - mean) + k * sd };
}

// ───────────────────────────── helpers ─────────────────────────────

export function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

export function logistic(z: number): number {
  return 1 / (1 + Math.exp(-z));
}

/** First-order lag toward a target: x + (target − x)·(1 − e^(−dt/τ)). */
export function firstOrder(x: number, target: number, dtMs: number, tauMs: number): number {
  if (tauMs <= 0) return target;
  return x + (target - x) * (1 - Math.exp(-dtMs / tauMs));
}
