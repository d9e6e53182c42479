/**
 * `linekeeper discover opcua|modbus`: start a site's configuration from what
 * the device has. Both write tag lists in the configuration's own shape (YAML,
 * one list per equipment, ready to paste under `tags:`), to stdout or `--out`;
 * the file is written only when the whole discovery or import succeeded.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { defaultConfigFile, loadConfig } from '../../config/load.js';
import { compactModbusTag, importRegisterTable, OPTIONAL_COLUMNS, REQUIRED_COLUMNS } from '../../config/register-table.js';
import { renderTagGroups } from '../../config/tag-yaml.js';
import type { OpcUaConnectionConfig } from '../../config/schema.js';
import { LkError } from '../../errors.js';
import { checkOutputFile, fileError, readInputFile } from '../../files.js';
import { InvalidArgumentError } from 'commander';
import { integer } from '../option-parsers.js';

interface OpcUaOpts {
  under?: string;
  namespaceUri?: string;
  out?: string;
  config: string;
  connection?: string;
  data?: string;
  securityMode?: 'None' | 'Sign' | 'SignAndEncrypt';
  securityPolicy?: 'None' | 'Basic256Sha256';
  maxNodes: number;
  maxDepth: number;
  timeout?: number;
}

/** A whole number in [min, max] for a commander option. */
function between(min: number, max: number): (v: string) => number {
  return (v) => {
    const n = integer(v);
    if (n < min || n > max) throw new InvalidArgumentError(`must be between ${min} and ${max}`);
    return n;
  };
}

/** Write `text` to `file` in one step (a temp file renamed over it): a failure leaves no half file. */
function writeOut(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  } catch (err) {
    throw fileError(err, file, 'tag list (--out)', 'output');
  }
}

function emit(out: string | undefined, text: string): void {
  if (out) writeOut(out, text);
  else process.stdout.write(text);
}

export function registerDiscover(program: Command): void {
  const discover = program.command('discover').description('Tag lists for the site configuration from what a device has: browse an OPC UA server, import a Modbus register table (YAML to paste under an equipment\'s tags)');

  discover
    .command('opcua')
    .description('Browse an OPC UA server and write its variables as configuration tags: node id, data type, suggested kind (writable → setpoint candidate), UCUM unit, EURange; what cannot be configured is kept as a comment with the reason')
    .argument('<endpoint>', 'opc.tcp://host:port/path')
    .option('--under <node>', 'start node (ns=2;s=Press, nsu=<uri>;s=Press, i=85; relative to --namespace-uri without ns/nsu); default the Objects folder')
    .option('--namespace-uri <uri>', 'the connection\'s namespace_uri: node ids in it are written relative (default: the namespace most variables are in)')
    .option('-o, --out <file>', 'write the YAML to a file (only when discovery succeeded) instead of stdout')
    .option('-c, --config <file>', 'site configuration (for --connection and the data directory)', defaultConfigFile())
    .option('--connection <id>', 'take security, namespace_uri and request timeout from this OPC UA connection of the configuration')
    .option('-d, --data <dir>', 'data directory whose PKI is used (default: data_dir of the configuration); trust a server with `linekeeper certs trust`')
    .option('--security-mode <mode>', 'None, Sign or SignAndEncrypt (default None, or the connection\'s)')
    .option('--security-policy <policy>', 'None or Basic256Sha256 (default None, or the connection\'s)')
    .option('--max-nodes <n>', 'nodes browsed at most (objects and variables)', between(1, 1_000_000), 5000)
    .option('--max-depth <n>', 'levels below the start node browsed at most', between(1, 64), 10)
    .option('--timeout <ms>', 'request timeout (default 5000, or the connection\'s)', between(100, 600_000))
    .action(async (endpoint: string, opts: OpcUaOpts) => {
      if (!/^opc\.tcp:\/\/.+/.test(endpoint)) throw new LkError('LK_VALIDATION', `endpoint ${endpoint}: must be an opc.tcp:// URL`);
      for (const [flag, v, allowed] of [['--security-mode', opts.securityMode, ['None', 'Sign', 'SignAndEncrypt']], ['--security-policy', opts.securityPolicy, ['None', 'Basic256Sha256']]] as const) {
        if (v !== undefined && !(allowed as readonly string[]).includes(v)) throw new LkError('LK_VALIDATION', `${flag} ${v}: must be one of ${allowed.join(', ')}`);
      }
      if (opts.out) checkOutputFile(opts.out, 'tag list (--out)');
      let conn: OpcUaConnectionConfig | undefined;
      let dataDir = opts.data;
      if (opts.connection !== undefined || dataDir === undefined) {
        const loaded = loadConfig(opts.config, dataDir !== undefined ? { dataDir } : {});
        dataDir = loaded.dataDir;
        if (opts.connection !== undefined) {
          const c = loaded.config.connections.find((k) => k.id === opts.connection);
          if (!c || c.protocol !== 'opcua') throw new LkError('LK_VALIDATION', `--connection ${opts.connection}: no OPC UA connection of that id in ${loaded.file}`);
          conn = c;
        }
      }
      const { discoverOpcUa } = await import('../../../connectors/opcua/index.js');
      const namespaceUri = opts.namespaceUri ?? conn?.namespace_uri;
      const { result, mapped } = await discoverOpcUa({
        url: endpoint,
        dataDir,
        security: { mode: opts.securityMode ?? conn?.security.mode ?? 'None', policy: opts.securityPolicy ?? conn?.security.policy ?? 'None' },
        requestTimeoutMs: opts.timeout ?? conn?.request_timeout_ms ?? 5000,
        ...(opts.under !== undefined ? { under: opts.under } : {}),
        ...(namespaceUri !== undefined ? { namespaceUri } : {}),
        limits: { maxNodes: opts.maxNodes, maxDepth: opts.maxDepth },
      });
      const cut = result.cut
        ? `CUT: the browse stopped at --${result.cut.limit} ${result.cut.value}; the list is incomplete — narrow it with --under or raise --${result.cut.limit}`
        : undefined;
      const header = [
        `Tags of ${endpoint} below ${result.start.browseName} (${result.start.nodeId.toString()}), by \`linekeeper discover opcua\`.`,
        `Paste a list under \`tags:\` of an equipment whose OPC UA connection has`,
        `  namespace_uri: ${JSON.stringify(mapped.namespaceUri ?? '(none: every node id here is absolute)')}`,
        'Node ids without ns/nsu are relative to it; nsu=<uri>; names another namespace (numeric ids always carry it).',
        `Kinds are suggestions from the access level (writable numeric → setpoint); units are UCUM (lines marked CHECK need a person).`,
        `${result.nodes} nodes browsed, ${result.variables.length} variables: ${mapped.tags} tags, ${mapped.commented} only as comments (not configurable).`,
        ...(result.skipped.length ? [`Not followed (namespace 0): ${result.skipped.join(', ')}.`] : []),
        ...(cut ? [cut] : []),
      ];
      emit(opts.out, renderTagGroups(header, mapped.groups));
      process.stderr.write(`linekeeper: ${result.variables.length} variables in ${result.nodes} nodes: ${mapped.tags} tags, ${mapped.commented} not configurable (as comments)${opts.out ? `; written to ${opts.out}` : ''}\n`);
      if (cut) process.stderr.write(`linekeeper: ${cut}\n`);
    });

  discover
    .command('modbus')
    .description(`Import a Modbus register table (CSV: ${REQUIRED_COLUMNS.join(',')}[,${OPTIONAL_COLUMNS.join(',')}]) as configuration tags; a bad row fails the import naming line and column (exit 65, nothing written)`)
    .requiredOption('--csv <file>', 'the register table')
    .option('-o, --out <file>', 'write the YAML to a file instead of stdout')
    .option('--equipment <id>', 'the list\'s key: the equipment id it is for', 'tags')
    .action((opts: { csv: string; out?: string; equipment: string }) => {
      if (!/^[a-z][a-z0-9-]*$/.test(opts.equipment)) throw new LkError('LK_VALIDATION', `--equipment ${opts.equipment}: must be lower-case letters, digits and dashes, starting with a letter`);
      if (opts.out) checkOutputFile(opts.out, 'tag list (--out)');
      const text = readInputFile(opts.csv, 'register table (--csv)', 4 * 1024 * 1024);
      const tags = importRegisterTable(text, basename(opts.csv));
      const header = [
        `Tags of the register table ${basename(opts.csv)}, by \`linekeeper discover modbus\`.`,
        'Paste the list under `tags:` of a Modbus equipment (its unit_id and connection are the equipment\'s).',
        `${tags.length} registers.`,
      ];
      emit(opts.out, renderTagGroups(header, [{ key: opts.equipment, entries: tags.map((t) => ({ tag: compactModbusTag(t.tag), path: `line ${t.line}`, notes: [] })) }]));
      process.stderr.write(`linekeeper: ${tags.length} tags imported${opts.out ? `; written to ${opts.out}` : ''}\n`);
    });
}
