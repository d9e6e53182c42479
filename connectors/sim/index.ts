/**
 * The plant simulator: a real OPC UA server (press, coater, NIR, vision, line
 * PLC) and a real Modbus TCP server (blender unit 1, fluid bed unit 2) over a
 * protocol-agnostic plant model with hidden true parameters and the PLC-side
 * heartbeat watchdog (rule R8). Built from the site configuration.
 *
 * Usage (tests of other modules — or use test/helpers/sim.ts):
 *
 *   const sim = await startSimulator({ timeScale: 60, watchdogTimeoutMs: 800 });
 *   // sim.opcuaUrl  'opc.tcp://127.0.0.1:P/linekeeper/sim'  namespace sim.namespaceUri
 *   // sim.modbusHost / sim.modbusPort  (unit 1 blender, unit 2 fluidbed)
 *   sim.plant.read('press', 'Hardness');            // ground truth, no protocol
 *   sim.faults.muteModbusUnit(2, true);              // unit 2 stops answering
 *   await sim.faults.restartOpcUa({ downtimeMs: 500 });
 *   await sim.close();
 *
 * Equipment behaviour: setpoints are refused while LOST, outside EURange, or
 * (OPC UA) of another DataType than Double. A setpoint write makes
 * ActiveRecipe "SUPERVISED" (Modbus 0) and arms the watchdog; so does the
 * first heartbeat CHANGE. No heartbeat change for WatchdogTimeoutMs (wall
 * clock) → LKG setpoints, SupervisorState LOST, ActiveRecipe = LkgRecipeId,
 * RevertCount + 1. Writing SupervisorState ATTENDED (Modbus 0) while
 * heartbeats arrive re-arms; writing LOST (1) commands a revert.
 *
 * Raw data feeds (feeds.ts; when the configuration has the tags):
 * - NIR: every scan (ScanInterval, process time) publishes `nir.Spectrum`
 *   (Double array, ValueRank 1, 351 absorbances on the axis `nir.Wavelengths`,
 *   1100–2500 nm in 4 nm steps) and `nir.SpectrumId` (= ScanCount). The
 *   spectrum is drawn with src/twin/nir `nirSample` from the true state: in
 *   BatchPhase BLEND… the probe's local concentration (scattered by the
 *   blender's RSD at its current revolutions), otherwise the batch's true
 *   potency. Both nodes carry the scan's wall time as source timestamp: a
 *   client pairs a spectrum with its id by equal source timestamps (one Read
 *   of both returns a pair from the same scan).
 * - Vision: every PLC scan in which the trigger count (one trigger per
 *   tablet) moved, a frame set of the newest trigger is rendered with
 *   src/twin/vision `renderFrameSet` and published as `vision.Frame1`…`Frame6`
 *   (ByteStrings) together with `vision.TriggerId`, in the same scan. Each
 *   frame starts with an 8-byte header holding its trigger id and camera
 *   (connectors/opcua/frames.ts: `assembleFrameSet` refuses a mixed set), so
 *   consistency is provable even from six separately sampled monitored
 *   items. The label is drawn from the station's defect rates: the press's
 *   capping, the truth's base rate split over the other classes, plus
 *   `sim.faults.injectDefects({...})`; mostly `good`.
 * - Ground truth: `sim.plant.nirScan(spectrumId)` (potency, blend/tablet),
 *   `sim.plant.visionTrigger(triggerId)` (label), for the last 4096 ids.
 * - Cost: at most one spectrum (~15 µs) and one frame set (~0.25 ms) per
 *   PLC scan; intermediate scans and triggers are counted, never rendered.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../../src/clock.js';
import { loadConfig, type LoadedConfig } from '../../src/config/load.js';
import { LkError } from '../../src/errors.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { startModbusServer, type SimModbusServer } from './modbus-server.js';
import { DEFAULT_NAMESPACE_URI, serverCertificateFile, startOpcUaServer, type SimOpcUaServer } from './opcua-server.js';
import type { DefectRates } from './feeds.js';
import { Plant } from './plant.js';

export { Plant, SUPERVISED } from './plant.js';
export type { LkgRecipe, PlantEvent, PlantOptions, RevertEvent, SupervisorState, SupervisorStatus } from './plant.js';
export { trueParameters, DEFAULT_LKG_SETPOINTS, DEFAULT_LKG_NUMBER, lkgRecipeId, measurementRange, type TrueParameters } from './truth.js';
export { buildRegisterMap, decodeValue, encodeValue, registerMapMarkdown, REGISTER_WIDTH, SUPERVISOR_STATE_CODES, isWritableTag } from './register-map.js';
export { MODBUS_EXCEPTION } from './modbus-server.js';
export { RESOURCE_PATH, DEFAULT_NAMESPACE_URI, serverCertificateFile } from './opcua-server.js';
export { euInformation, ucumFromEu, commonCodeToUnitId, UNIT_TABLE, UNECE_NAMESPACE } from './eu.js';
export { MODELS, TAU_MS, visionRejectRates } from './dynamics.js';
export { DRIFT } from './drift.js';
export { BASE_DEFECT_SHARES, HISTORY as FEED_HISTORY, defectRates, drawDefect, type DefectRates, type NirScanTruth, type TriggerTruth } from './feeds.js';

export interface SimulatorOptions {
  /** Site configuration file (default: the shipped config/site.yaml). Ignored when `config` is given. */
  configFile?: string;
  /** An already loaded configuration. */
  config?: LoadedConfig;
  /** 0 (default) = any free port. */
  opcuaPort?: number;
  modbusPort?: number;
  /** Process time runs this many times faster than wall time (default: config simulator.time_scale). */
  timeScale?: number;
  /** Seed of the hidden true parameters and of the noise (default: config simulator.seed). */
  seed?: number;
  /** PLC watchdog timeout, wall ms (default: config simulator.watchdog_timeout_ms). */
  watchdogTimeoutMs?: number;
  /** PLC scan period, wall ms: process steps, watchdog checks and the OPC UA sampling interval (default 50). */
  scanMs?: number;
  /** Folder for the server PKI (`<dataDir>/sim-pki`, `<dataDir>/sim-pki-user`). Default: a fresh temp dir removed on close. */
  dataDir?: string;
  security?: {
    /** Accept unknown client certificates (default true: the simulator is the equipment side). */
    autoAcceptClientCertificates?: boolean;
  };
  /** Wall clock (default the system clock). */
  clock?: Clock;
  /** Slow drift of material parameters (default true); false keeps the plant on its true parameters. */
  drift?: boolean;
  log?: Logger;
}

export interface SimulatorFaults {
  /** A muted unit gets requests and never answers (no reply at all); its PLC sees nothing, so heartbeats stop too. */
  muteModbusUnit(unitId: number, muted?: boolean): void;
  /** Answer the unit's requests `ms` late (0 = on time). */
  delayModbusUnit(unitId: number, ms: number): void;
  /** Close every open Modbus TCP connection; the server keeps listening. */
  dropModbusConnections(): void;
  /** Stop the OPC UA server (sessions die; the port is free until startOpcUa). */
  stopOpcUa(): Promise<void>;
  /** Start it again on the same port and PKI (same URL, same certificate). */
  startOpcUa(): Promise<void>;
  /** stopOpcUa, wait downtimeMs (default 0), startOpcUa. */
  restartOpcUa(opts?: { downtimeMs?: number }): Promise<void>;
  /** Raise the camera station's defect rates (% per class; `{}` ends it). Throws LK_VALIDATION. See Plant.injectDefects. */
  injectDefects(rates: DefectRates): void;
  /** Move the press's true parameters by factors (a plant the twin no longer describes; `{}` ends it). See Plant.skewPress. */
  skewPress(factors: Readonly<Record<string, number>>): void;
  /** Undo mutes, delays, injected defects and a press skew. */
  clear(): void;
}

export interface Simulator {
  /** `opc.tcp://127.0.0.1:P/linekeeper/sim` */
  readonly opcuaUrl: string;
  readonly opcuaPort: number;
  /** Namespace of the equipment nodes (resolve its index on the client: `ns=<index>;s=press.Setpoints.MainForce`). */
  readonly namespaceUri: string;
  readonly modbusHost: string;
  readonly modbusPort: number;
  /** `127.0.0.1:Q`, the form of a Modbus connection's endpoint. */
  readonly modbusEndpoint: string;
  readonly plant: Plant;
  readonly config: LoadedConfig;
  readonly dataDir: string;
  /** Server PKI folder; trusted/ and rejected/ client certificates live under it. */
  readonly pkiDir: string;
  /** The certificate (PEM) the OPC UA server presents: trust it on the client side. */
  readonly serverCertificateFile: string;
  readonly faults: SimulatorFaults;
  /** Trust a client certificate (DER) when autoAcceptClientCertificates is false. */
  trustClientCertificate(der: Buffer): Promise<void>;
  /** The line printed by `linekeeper sim`: `{"opcua":"opc.tcp://...","modbus":"127.0.0.1:Q"}`. */
  endpointsJson(): string;
  close(): Promise<void>;
}

/**
 * Start the simulator. Throws LkError(LK_CONFIG_*) for a bad configuration,
 * LK_VALIDATION for bad options, LK_CONN_UNAVAILABLE when a port is taken.
 */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const loaded = opts.config ?? loadConfig(opts.configFile);
  const config = loaded.config;
  const log = opts.log ?? silentLogger;
  const clock = opts.clock ?? systemClock;
  const scanMs = opts.scanMs ?? 50;
  for (const [k, v] of Object.entries({ opcuaPort: opts.opcuaPort, modbusPort: opts.modbusPort })) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= 65535)) throw new LkError('LK_VALIDATION', `${k} must be an integer 0..65535, got ${v}`);
  }
  if (!(Number.isFinite(scanMs) && scanMs >= 1)) throw new LkError('LK_VALIDATION', `scanMs must be ≥ 1, got ${scanMs}`);
  const plant = new Plant({
    equipment: config.equipment,
    clock,
    timeScale: opts.timeScale ?? config.simulator.time_scale,
    seed: opts.seed ?? config.simulator.seed,
    watchdogTimeoutMs: opts.watchdogTimeoutMs ?? config.simulator.watchdog_timeout_ms,
    punchDiameterMm: config.tooling[0]?.punch_diameter_mm,
    drift: opts.drift ?? true,
  });
  const ownDataDir = opts.dataDir === undefined;
  const dataDir = ownDataDir ? mkdtempSync(join(tmpdir(), 'linekeeper-sim-')) : resolve(opts.dataDir!);
  const pkiDir = join(dataDir, 'sim-pki');
  const userPkiDir = join(dataDir, 'sim-pki-user');
  mkdirSync(pkiDir, { recursive: true });
  mkdirSync(userPkiDir, { recursive: true });
  const autoAccept = opts.security?.autoAcceptClientCertificates ?? true;

  const timer = setInterval(() => {
    try {
      plant.tick();
    } catch (e) {
      // a model bug must not take the servers (and the watchdog's visibility) down with it
      log.error({ err: (e as Error).message }, 'plant scan failed');
    }
  }, scanMs);
  const offRevert = plant.on((e) => {
    if (e.type === 'revert') log.warn({ equipment: e.equipment, reason: e.reason, recipe: e.recipe, revertCount: e.revertCount }, 'PLC reverted to LKG recipe');
    else log.info({ equipment: e.equipment }, 'PLC re-armed');
  });

  let opcua: SimOpcUaServer | undefined;
  let modbusServer: SimModbusServer | undefined;
  const startOpc = async (port: number): Promise<SimOpcUaServer> =>
    startOpcUaServer(plant, config, { port, pkiDir, userPkiDir, autoAcceptClientCertificates: autoAccept, samplingMs: scanMs, log });
  try {
    opcua = await startOpc(opts.opcuaPort ?? 0);
    modbusServer = await startModbusServer(plant, config, { port: opts.modbusPort ?? 0, log });
  } catch (e) {
    clearInterval(timer);
    offRevert();
    await opcua?.close().catch(() => undefined);
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const opcuaPort = opcua.port;
  const modbus = modbusServer;
  const opcuaUrl = opcua.url;
  let closed = false;

  const faults: SimulatorFaults = {
    muteModbusUnit: (unitId, muted = true) => modbus.muteUnit(unitId, muted),
    delayModbusUnit: (unitId, ms) => modbus.delayUnit(unitId, ms),
    dropModbusConnections: () => modbus.dropConnections(),
    async stopOpcUa() {
      const s = opcua;
      opcua = undefined;
      await s?.close();
    },
    async startOpcUa() {
      if (opcua || closed) return;
      opcua = await startOpc(opcuaPort);
    },
    async restartOpcUa(o = {}) {
      await faults.stopOpcUa();
      if ((o.downtimeMs ?? 0) > 0) await new Promise((r) => setTimeout(r, o.downtimeMs));
      await faults.startOpcUa();
    },
    injectDefects: (rates) => plant.injectDefects(rates),
    skewPress: (factors) => plant.skewPress(factors),
    clear() {
      plant.injectDefects({});
      plant.skewPress({});
      for (const e of config.equipment) {
        if (e.protocol !== 'modbus') continue;
        modbus.muteUnit(e.unit_id, false);
        modbus.delayUnit(e.unit_id, 0);
      }
    },
  };

  const opcConn = config.connections.find((c) => c.protocol === 'opcua');
  return {
    opcuaUrl,
    opcuaPort,
    namespaceUri: opcConn && opcConn.protocol === 'opcua' ? opcConn.namespace_uri : DEFAULT_NAMESPACE_URI,
    modbusHost: modbus.host,
    modbusPort: modbus.port,
    modbusEndpoint: `${modbus.host}:${modbus.port}`,
    plant,
    config: loaded,
    dataDir,
    pkiDir,
    serverCertificateFile: serverCertificateFile(pkiDir),
    faults,
    async trustClientCertificate(der) {
      const cm = opcua?.certificateManager;
      if (!cm) throw new LkError('LK_CONN_UNAVAILABLE', 'OPC UA simulator is stopped');
      await cm.trustCertificate(der);
    },
    endpointsJson: () => JSON.stringify({ opcua: opcuaUrl, modbus: `${modbus.host}:${modbus.port}` }),
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      offRevert();
      await Promise.allSettled([opcua?.close(), modbus.close()]);
      opcua = undefined;
      if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
