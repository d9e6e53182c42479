/**
 * The architecture rules of linekeeper, checked on the TypeScript compiler's
 * own view of the code (module resolution, AST, type checker) rather than on
 * text: an aliased `Date`, a computed key or a re-export cannot hide from it.
 * The layer table below is the single place to extend when a layer or a
 * connector arrives; docs/architecture.md explains it.
 */
import { existsSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

// ---------------------------------------------------------------------------
// The layer table
// ---------------------------------------------------------------------------

export interface Layer {
  /** Path prefixes (relative to the repo root, `/`-separated) of the files in this layer; longest prefix wins. */
  readonly paths: readonly string[];
  /** Other layers this one may import (its own layer is always allowed). */
  readonly imports: readonly string[];
  /** Layers it may import with `import type` only (no runtime edge). */
  readonly types?: readonly string[];
  /** Pure: no I/O module, no clock or randomness of its own. */
  readonly pure?: boolean;
}

const KERNEL = ['errors', 'clock', 'version'];
const PURE_CORE = ['domain', 'config-schema', 'policy', 'arbitration', 'twin', 'agents'];
const IO_BASE = [...KERNEL, 'log', 'files', 'worker-script', 'config'];
/** Persistence as a whole, for the layers above it. */
const PERSISTENCE = ['database', 'audit', 'store'];

/**
 * Who may import whom. Pure layers sit at the bottom; I/O layers build on
 * them; entry points (cli, daemon) sit on top. Adding a layer: add a row and
 * list it in the `imports` of the layers that use it.
 */
export const LAYERS: Readonly<Record<string, Layer>> = {
  // kernel: tiny leaf modules every layer may use
  errors: { paths: ['src/errors.ts'], imports: [] },
  clock: { paths: ['src/clock.ts'], imports: [] },
  version: { paths: ['src/version.ts'], imports: [] },
  // pure core
  domain: { paths: ['src/domain/'], imports: ['errors', 'clock'], types: ['config-schema'], pure: true },
  'config-schema': { paths: ['src/config/schema.ts'], imports: ['errors', 'domain'], pure: true },
  policy: { paths: ['src/policy/'], imports: ['errors', 'clock', 'domain', 'config-schema'], pure: true },
  arbitration: { paths: ['src/arbitration/'], imports: ['errors', 'clock', 'domain', 'policy'], pure: true },
  twin: { paths: ['src/twin/'], imports: ['errors', 'clock', 'domain', 'config-schema'], pure: true },
  agents: { paths: ['src/agents/'], imports: ['errors', 'clock', 'domain', 'config-schema', 'policy', 'arbitration', 'twin'], pure: true },
  // the truth of the batch: the specification table, OOS/OOT, reconciliation, model fidelity (judgements only)
  quality: { paths: ['src/quality/'], imports: ['errors', 'domain'], pure: true },
  // the wire contract: the zod schemas of what the API answers (runs, steps, tool-call lines, exceptions), whose
  // inferred types the engine builds, the API serves and the SDK ships; pure so the SDK can carry it
  contract: { paths: ['src/contract/'], imports: ['domain'], pure: true },
  // the simulated plant's ground truth (hidden parameters, batch generator): part of the simulator, pure so that
  // the default models and golden datasets built from it are the same bytes for the same seed; the product
  // (twin, policy, arbitration, agents) never sees it
  'ground-truth': { paths: ['connectors/sim/ground/'], imports: ['errors', 'clock', 'domain', 'config-schema', 'twin'], pure: true },
  // I/O base
  log: { paths: ['src/log.ts'], imports: KERNEL },
  files: { paths: ['src/files.ts'], imports: KERNEL },
  // where a worker thread's module is (compiled, or from sources through tsx): the heavy work beside the event loop
  'worker-script': { paths: ['src/worker-script.ts'], imports: [] },
  config: { paths: ['src/config/'], imports: [...KERNEL, 'files', 'log', ...PURE_CORE] },
  // persistence, in three tiers: the database (file, schema, migrations, SQLite errors); the audit trail
  // built on it; the store, which composes both so that a change and its audit entry commit together
  database: { paths: ['src/store/migrations.ts', 'src/store/triggers.ts', 'src/store/data-dir.ts', 'src/store/sqlite-errors.ts'], imports: [...KERNEL] },
  audit: { paths: ['src/audit/'], imports: [...IO_BASE, ...PURE_CORE, 'database'], types: ['store', 'connectors'] },
  store: { paths: ['src/store/'], imports: [...IO_BASE, ...PURE_CORE, 'database', 'audit'], types: ['connectors'] },
  // the default models of a fresh install and the golden datasets are made from the simulated plant's ground truth
  models: { paths: ['src/models/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'ground-truth'] },
  // devices: connectors speak the protocols; the simulator is a connector that also plays the plant
  connectors: { paths: ['connectors/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'ground-truth'] },
  supervision: { paths: ['src/supervision/'], imports: [...IO_BASE, ...PURE_CORE, 'connectors'] },
  engine: { paths: ['src/engine/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'quality', 'contract', 'models', 'connectors', 'supervision'] },
  // surfaces
  ops: { paths: ['src/ops/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'contract', 'models', 'connectors', 'engine'], types: ['api'] },
  api: { paths: ['src/api/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'quality', 'contract', 'models', 'connectors', 'supervision', 'engine', 'ops'] },
  // the SDK is shipped to agent authors: it talks HTTP to the API and shares its wire contract and types
  sdk: { paths: ['src/sdk/'], imports: ['errors', 'domain', 'contract'], types: ['api'] },
  // the validation of an installed node (IQ, OQ, the configuration specification): it qualifies the whole product,
  // so it may use all of it (the OQ starts a daemon on a scratch data directory)
  validation: { paths: ['src/validation/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'quality', 'contract', 'ground-truth', 'models', 'connectors', 'supervision', 'engine', 'ops', 'api', 'sdk', 'daemon'] },
  cli: { paths: ['src/cli/'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'quality', 'contract', 'ground-truth', 'models', 'connectors', 'supervision', 'engine', 'ops', 'api', 'sdk', 'daemon', 'validation'] },
  daemon: { paths: ['src/daemon.ts'], imports: [...IO_BASE, ...PURE_CORE, ...PERSISTENCE, 'contract', 'ground-truth', 'models', 'connectors', 'supervision', 'engine', 'ops', 'api'] },
  'ambient-types': { paths: ['src/types/'], imports: [] },
};

/**
 * Imports that break the table on purpose, each with the reason and when it goes. Keep this empty.
 * Key: `importing file -> imported file`.
 */
export const TEMPORARY_EXCEPTIONS: Readonly<Record<string, string>> = {};

/** Modules that reach the outside world: never imported by a pure layer. */
export const IO_MODULES: ReadonlySet<string> = new Set([
  ...['fs', 'fs/promises', 'net', 'http', 'https', 'http2', 'tls', 'dgram', 'dns', 'child_process', 'worker_threads', 'cluster',
    'os', 'process', 'readline', 'repl', 'inspector', 'v8', 'vm', 'perf_hooks', 'timers', 'timers/promises'].flatMap((m) => [m, `node:${m}`]),
  'better-sqlite3', 'node-opcua', 'modbus-serial', 'mqtt', 'fastify', 'pino', 'undici', 'ws',
]);

/** Protocol client libraries: only connectors/ speak them. */
export const PROTOCOL_MODULES = new Set(['node-opcua', 'node-opcua-client', 'modbus-serial', 'mqtt']);
/** Files outside connectors/ allowed to load a protocol library, and why. */
export const PROTOCOL_EXCEPTIONS: Readonly<Record<string, string>> = {
  // routes node-opcua's console warnings to the log before the simulator starts; opens nothing
  'src/cli/commands/sim.ts': 'node-opcua',
};

/** What src/ may import from connectors/ by value: entry points and the interface, never internals. */
// connectors/supervision.ts: the PLC supervision profiles, pure (no protocol library), so that what loads them — the
// CLI's doctor, the engine — does not load node-opcua and modbus-serial with them; connectors/sim/child-process.ts: the
// embedded simulator as a child process, so that the daemon that starts it does not load its servers; connectors/memory/index.ts:
// the plant with in-memory connectors (DaemonOptions.embeddedSimulator 'memory'), loaded on demand like the simulator
export const CONNECTOR_ENTRY = /^connectors\/(index|types|supervision|(opcua|modbus|sim|mqtt|mes|lims|memory)\/index|opcua\/pki|sim\/child-process)\.ts$/;

/** The only file that may claim a connector's write capability and hold one. */
export const WRITE_HOLDERS = new Set(['src/engine/guarded-writer.ts']);
/** Where the capability is defined and implemented (connectors hand it out; they never claim it). */
export const CAPABILITY_DEFINERS = [/^connectors\/types\.ts$/, /^connectors\/lkg\.ts$/, /^connectors\/(opcua|modbus|mqtt|memory)\//];

/**
 * The run's steps (src/engine/run/steps/): no step imports another step. What steps share lives in a helper
 * module (common.ts; press-fidelity.ts is the press step's own calculation, kept apart to be unit-tested); only
 * the registry (index.ts) imports the steps. A helper imports no step either.
 */
export const STEPS_DIR = 'src/engine/run/steps/';
export const STEP_REGISTRY = `${STEPS_DIR}index.ts`;
export const STEP_HELPERS: ReadonlySet<string> = new Set([`${STEPS_DIR}common.ts`, `${STEPS_DIR}press-fidelity.ts`]);
/**
 * What no file of the steps (registry and helpers included) may import, not even a type: a step works through its
 * StepContext (tool calls, proposals, arbitration rounds, events, exceptions) and the engine's StepServices (read-only
 * views, named transitions), so it can neither write past the log nor change state outside the engine's transactions.
 * The row types a step sees arrive through those two (src/engine/run/step-services.ts), never from the store.
 */
export const STEP_FORBIDDEN: readonly { readonly target: string; readonly why: string }[] = [
  { target: 'src/engine/guarded-writer.ts', why: 'proposals and arbitration rounds go through the StepContext (ctx.propose, ctx.contest)' },
  { target: 'src/store/', why: 'state changes are the engine\'s named transitions on StepServices, reads its views' },
  { target: 'src/engine/run/engine.ts', why: 'a step gets StepServices, not the engine' },
];

// ---------------------------------------------------------------------------
// The checker
// ---------------------------------------------------------------------------

export interface Violation {
  readonly file: string;
  readonly line: number;
  readonly rule: 'layer' | 'io-module' | 'connector-internals' | 'protocol' | 'clock-or-random' | 'write-capability' | 'plant-write' | 'unlayered' | 'step-imports-step' | 'step-reaches-engine';
  readonly detail: string;
}

export function layerOf(path: string): string | null {
  let best: { name: string; len: number } | null = null;
  for (const [name, l] of Object.entries(LAYERS)) {
    for (const p of l.paths) if ((p.endsWith('/') ? path.startsWith(p) : path === p) && (!best || p.length > best.len)) best = { name, len: p.length };
  }
  return best?.name ?? null;
}

export function loadCompilerOptions(root: string): ts.CompilerOptions {
  const cfg = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
  // the project's own files only: a package's types (node-opcua alone brings 1,500 declaration files) are
  // not needed to see what our code calls, and loading them costs most of the check's time
  return { ...ts.parseJsonConfigFileContent(cfg.config, ts.sys, root).options, noResolve: true, types: ['node'], noEmit: true };
}

/** A compiler host over the real disk with an overlay of in-memory files; parsed files are shared between programs. */
export function overlayHost(options: ts.CompilerOptions, overlay: ReadonlyMap<string, string> = new Map(), cache = new Map<string, ts.SourceFile>()): ts.CompilerHost {
  const base = ts.createCompilerHost(options, true);
  return {
    ...base,
    fileExists: (f) => overlay.has(resolve(f)) || base.fileExists(f),
    readFile: (f) => overlay.get(resolve(f)) ?? base.readFile(f),
    getSourceFile: (f, lang, onError) => {
      const abs = resolve(f);
      const text = overlay.get(abs);
      if (text !== undefined) return ts.createSourceFile(f, text, lang, true);
      const hit = cache.get(abs);
      if (hit) return hit;
      const sf = base.getSourceFile(f, lang, onError);
      if (sf) cache.set(abs, sf);
      return sf;
    },
  };
}

function packageName(spec: string): string {
  if (spec.startsWith('node:')) return spec.split('/').slice(0, spec.startsWith('node:fs/') || spec.startsWith('node:timers/') ? 2 : 1).join('/');
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : spec === 'fs/promises' || spec === 'timers/promises' ? spec : parts[0]!;
}

interface ImportSite { spec: string; node: ts.Node; typeOnly: boolean }

function importsOf(sf: ts.SourceFile): ImportSite[] {
  const out: ImportSite[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const typeOnly = !!c && (c.isTypeOnly || (!c.name && !!c.namedBindings && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      out.push({ spec: n.moduleSpecifier.text, node: n, typeOnly });
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      out.push({ spec: n.moduleSpecifier.text, node: n, typeOnly: n.isTypeOnly });
    } else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference) && ts.isStringLiteral(n.moduleReference.expression)) {
      out.push({ spec: n.moduleReference.expression.text, node: n, typeOnly: n.isTypeOnly });
    } else if (ts.isCallExpression(n) && (n.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(n.expression) && n.expression.text === 'require'))) {
      const a = n.arguments[0];
      // a computed specifier hides the target: flag it as a module nobody may import
      out.push({ spec: a && ts.isStringLiteralLike(a) ? a.text : '<computed>', node: n, typeOnly: false });
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      out.push({ spec: n.argument.literal.text, node: n, typeOnly: true });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Members that read the wall clock or a random source (checked by declaring interface, so aliases are caught). */
const CLOCK_OR_RANDOM: Readonly<Record<string, readonly string[]>> = {
  DateConstructor: ['now'],
  Math: ['random'],
  Performance: ['now', 'timeOrigin'],
  Crypto: ['randomUUID', 'getRandomValues'],
};
/** Member names worth a type query. */
const WATCHED_MEMBERS = new Set([...Object.values(CLOCK_OR_RANDOM).flat(), 'claimWriter', 'writeSetpoint', 'writeSetpoints', 'setSupervisorState']);
/** Globals that carry a clock or a random source. */
const CLOCK_GLOBALS = new Set(['Date', 'Math', 'performance', 'crypto']);
/** node:crypto functions that draw randomness (hashing stays allowed). */
const RANDOM_FUNCTIONS = new Set(['randomBytes', 'randomUUID', 'randomInt', 'randomFill', 'randomFillSync', 'getRandomValues']);

/**
 * Check the given files of a program against every rule.
 * @param root the repository root (paths in violations are relative to it)
 */
export function checkArchitecture(program: ts.Program, root: string, files: readonly string[]): Violation[] {
  const checker = program.getTypeChecker();
  const options = program.getCompilerOptions();
  const out: Violation[] = [];
  const rel = (abs: string): string => relative(root, abs).split(sep).join('/');
  const moduleCache = ts.createModuleResolutionCache(root, (x) => x, options);

  const declaredIn = (sym: ts.Symbol | undefined): { file: string; owner: string | undefined }[] =>
    (sym?.declarations ?? []).map((d) => {
      const owner = ts.isInterfaceDeclaration(d.parent) || ts.isClassDeclaration(d.parent) ? d.parent.name?.text : ts.isVariableDeclaration(d) && ts.isIdentifier(d.name) ? d.name.text : undefined;
      return { file: rel(d.getSourceFile().fileName), owner };
    });
  const isConnectorDecl = (d: { file: string }): boolean => d.file.startsWith('connectors/');

  for (const abs of files) {
    const sf = program.getSourceFile(abs);
    if (!sf) throw new Error(`architecture check: ${abs} is not in the program`);
    const path = rel(sf.fileName);
    const layerName = layerOf(path);
    const at = (n: ts.Node): number => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
    const hit = (n: ts.Node, rule: Violation['rule'], detail: string): void => { out.push({ file: path, line: at(n), rule, detail }); };
    if (!layerName) { out.push({ file: path, line: 1, rule: 'unlayered', detail: 'file belongs to no layer of the table' }); continue; }
    const layer = LAYERS[layerName]!;
    const holder = WRITE_HOLDERS.has(path);
    const definer = CAPABILITY_DEFINERS.some((r) => r.test(path));
    const inSrc = path.startsWith('src/');

    // --- imports: layers, I/O modules, connector internals, protocol libraries
    for (const imp of importsOf(sf)) {
      if (imp.spec === '<computed>') { hit(imp.node, 'layer', 'import() with a computed specifier'); continue; }
      const r = ts.resolveModuleName(imp.spec, sf.fileName, options, ts.sys, moduleCache).resolvedModule;
      const target = r && !r.isExternalLibraryImport ? rel(r.resolvedFileName) : null;
      if (target && !target.startsWith('..') && !target.startsWith('node_modules/')) {
        const tl = layerOf(target);
        if (!tl) { hit(imp.node, 'unlayered', `imports ${target}, which belongs to no layer`); continue; }
        const ok = tl === layerName || layer.imports.includes(tl) || (imp.typeOnly && (layer.types ?? []).includes(tl));
        if (!ok && !TEMPORARY_EXCEPTIONS[`${path} -> ${target}`]) hit(imp.node, 'layer', `${layerName} may not import ${tl}${imp.typeOnly ? ' (even type-only)' : ''} (${target})`);
        if (inSrc && tl === 'connectors' && !imp.typeOnly && !CONNECTOR_ENTRY.test(target)) hit(imp.node, 'connector-internals', `value import of connector internals ${target}`);
        if (path.startsWith(STEPS_DIR) && path !== STEP_REGISTRY && target.startsWith(STEPS_DIR) && !STEP_HELPERS.has(target)) hit(imp.node, 'step-imports-step', `imports the step ${target} (shared step helpers belong in ${STEPS_DIR}common.ts)`);
        const reach = path.startsWith(STEPS_DIR) ? STEP_FORBIDDEN.find((f) => (f.target.endsWith('/') ? target.startsWith(f.target) : target === f.target)) : undefined;
        if (reach) hit(imp.node, 'step-reaches-engine', `imports ${target}${imp.typeOnly ? ' (even type-only)' : ''}: ${reach.why}`);
        continue;
      }
      const pkg = packageName(imp.spec);
      if (layer.pure && !imp.typeOnly && (IO_MODULES.has(pkg) || IO_MODULES.has(imp.spec))) hit(imp.node, 'io-module', `pure layer ${layerName} imports ${imp.spec}`);
      if (!path.startsWith('connectors/') && PROTOCOL_MODULES.has(pkg) && !imp.typeOnly && PROTOCOL_EXCEPTIONS[path] !== pkg) hit(imp.node, 'protocol', `imports protocol client ${pkg} outside connectors/`);
      if (layer.pure && (pkg === 'node:crypto' || pkg === 'crypto') && ts.isImportDeclaration(imp.node)) {
        const nb = imp.node.importClause?.namedBindings;
        if (nb && ts.isNamedImports(nb)) for (const e of nb.elements) if (RANDOM_FUNCTIONS.has((e.propertyName ?? e.name).text)) hit(e, 'clock-or-random', `imports ${(e.propertyName ?? e.name).text} from ${imp.spec}`);
      }
    }

    // --- member access through the type checker (aliases, globalThis, destructuring, computed keys)
    /** Forbidden members of a type for this file: rule and member names. */
    const forbidden = (objType: ts.Type, key: string | null): { rule: Violation['rule']; detail: string } | null => {
      const t = checker.getApparentType(objType);
      const props = key === null ? t.getProperties() : [checker.getPropertyOfType(t, key)].filter((p): p is ts.Symbol => !!p);
      for (const p of props) {
        const decls = declaredIn(p);
        const name = p.getName();
        if (layer.pure && decls.some((d) => d.owner && CLOCK_OR_RANDOM[d.owner]?.includes(name) && !d.file.startsWith('src/') && !d.file.startsWith('connectors/'))) {
          return { rule: 'clock-or-random', detail: `${key === null ? 'computed access on a value with ' : ''}${decls[0]!.owner}.${name}` };
        }
        if (!holder && name === 'claimWriter' && decls.some(isConnectorDecl)) {
          return { rule: 'write-capability', detail: key === null ? 'computed access on a value that can claimWriter()' : 'reaches claimWriter()' };
        }
        if (inSrc && (name === 'writeSetpoint' || name === 'writeSetpoints' || name === 'setSupervisorState') && decls.some((d) => d.file.startsWith('connectors/sim/'))) {
          return { rule: 'plant-write', detail: `writes the simulator's plant directly (${name})` };
        }
      }
      return null;
    };
    const isCapabilityType = (t: ts.Type): boolean => {
      const check = (x: ts.Type): boolean => {
        const s = x.aliasSymbol ?? x.getSymbol();
        return !!s && s.getName() === 'WriteCapability' && declaredIn(s).some((d) => d.file === 'connectors/types.ts');
      };
      return check(t) || (t.isUnionOrIntersection() && t.types.some(check));
    };
    const capabilityScope = !holder && !definer;
    /** Whether a value of type t gives its user the capability (directly, in a container, returned, or as a public member). */
    const mentionsCapability = (t: ts.Type, depth: number): boolean => {
      if (isCapabilityType(t)) return true;
      if (depth === 0) return false;
      if (t.isUnionOrIntersection()) return t.types.some((x) => mentionsCapability(x, depth - 1));
      const args = (t.flags & ts.TypeFlags.Object) !== 0 && ((t as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference) !== 0 ? checker.getTypeArguments(t as ts.TypeReference) : [];
      if (args.some((x) => mentionsCapability(x, depth - 1))) return true;
      for (const sig of [...t.getCallSignatures(), ...t.getConstructSignatures()]) if (mentionsCapability(sig.getReturnType(), depth - 1)) return true;
      if (t.getSymbol()?.declarations?.some((d) => d.getSourceFile().fileName.includes('node_modules') || d.getSourceFile().isDeclarationFile)) return false;
      for (const p of t.getProperties()) {
        const d = p.valueDeclaration;
        if (!d || (ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0 || (ts.isPropertyDeclaration(d) && ts.isPrivateIdentifier(d.name))) continue;
        if (mentionsCapability(checker.getTypeOfSymbolAtLocation(p, d), depth - 1)) return true;
      }
      return false;
    };

    /** The lib's own Date, Math, performance or crypto global (not a local of that name). */
    const globalOf = (n: ts.Node): string | null => {
      const name = ts.isIdentifier(n) ? n.text : ts.isPropertyAccessExpression(n) ? n.name.text : null;
      if (!name || !CLOCK_GLOBALS.has(name)) return null;
      const decls = declaredIn(checker.getSymbolAtLocation(ts.isPropertyAccessExpression(n) ? n.name : n));
      return decls.length > 0 && decls.every((d) => !d.file.startsWith('src/') && !d.file.startsWith('connectors/') && !d.file.startsWith('test/')) ? name : null;
    };

    const visit = (n: ts.Node): void => {
      // type queries are costly: ask the checker only where a watched name or a computed key appears
      if (ts.isPropertyAccessExpression(n)) {
        if (WATCHED_MEMBERS.has(n.name.text)) {
          const f = forbidden(checker.getTypeAtLocation(n.expression), n.name.text);
          if (f) hit(n, f.rule, f.detail);
        }
      } else if (ts.isElementAccessExpression(n)) {
        const a = n.argumentExpression;
        const key = ts.isStringLiteralLike(a) || ts.isNumericLiteral(a) ? a.text : null;
        if (key === null || WATCHED_MEMBERS.has(key)) {
          const t = checker.getTypeAtLocation(n.expression);
          const f = forbidden(t, key);
          if (f) hit(n, f.rule, f.detail);
          else if (capabilityScope && isCapabilityType(t)) hit(n, 'write-capability', 'uses a value of the WriteCapability type');
        }
      } else if (ts.isBindingElement(n) && ts.isObjectBindingPattern(n.parent) && !n.dotDotDotToken) {
        const pn = n.propertyName ?? n.name;
        const key = ts.isIdentifier(pn) || ts.isStringLiteralLike(pn) ? pn.text : null;
        if (key === null || WATCHED_MEMBERS.has(key)) {
          const f = forbidden(checker.getTypeAtLocation(n.parent), key);
          if (f) hit(n, f.rule, f.detail);
        }
      }
      if (layer.pure && (ts.isIdentifier(n) || ts.isPropertyAccessExpression(n))) {
        const g = globalOf(n);
        const p = n.parent;
        if (g && !(ts.isPropertyAccessExpression(p) && p.expression === n)) {
          // Date may be constructed from a value (new Date(ms)) and read for its static helpers (Date.UTC);
          // any other use — Date(), new Date(), an alias — is a way to the wall clock
          if (g === 'Date' && ts.isNewExpression(p) && p.expression === n) {
            if ((p.arguments ?? []).length === 0) hit(p, 'clock-or-random', 'new Date() without an argument reads the wall clock');
          } else if (g === 'Date' && ts.isCallExpression(p) && p.expression === n) {
            hit(p, 'clock-or-random', 'Date() reads the wall clock');
          } else if (!ts.isTypeQueryNode(p) && !ts.isPropertyAccessExpression(p)) {
            hit(n, 'clock-or-random', `${g} escapes into a value (an alias bypasses the clock and randomness rules)`);
          }
        }
      }
      if (capabilityScope) {
        // the capability is named in a type position or imported by name
        if (ts.isTypeReferenceNode(n) || ts.isExpressionWithTypeArguments(n)) {
          if (isCapabilityType(checker.getTypeFromTypeNode(n as ts.TypeNode))) hit(n, 'write-capability', 'names the WriteCapability type');
        } else if (ts.isImportSpecifier(n) && (n.propertyName ?? n.name).text === 'WriteCapability') {
          hit(n, 'write-capability', 'imports the WriteCapability type');
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);

    // the holder keeps what it claimed: nothing it exports (public members included) carries the capability
    if (holder) {
      const mod = checker.getSymbolAtLocation(sf);
      for (const sym of mod ? checker.getExportsOfModule(mod) : []) {
        const t = checker.getTypeOfSymbolAtLocation(sym, sf);
        if (mentionsCapability(t, 3)) out.push({ file: path, line: sym.declarations?.[0] ? at(sym.declarations[0]) : 1, rule: 'write-capability', detail: `export ${sym.getName()} hands the WriteCapability out` });
      }
    }
  }
  // one violation per place and rule is enough to read
  const seen = new Set<string>();
  return out.filter((v) => { const k = `${v.file}:${v.line}:${v.rule}`; if (seen.has(k)) return false; seen.add(k); return true; });
}

/** Every .ts source under the given folders of root (not .d.ts outside src/types). */
export function sourceFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of ts.sys.readDirectory(d, ['.ts', '.mts'], undefined, undefined)) out.push(resolve(e));
  };
  for (const d of dirs) if (existsSync(join(root, d))) walk(join(root, d));
  return out.filter((f) => !f.endsWith('.d.ts')).sort();
}
