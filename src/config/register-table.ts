/**
 * A Modbus register table (CSV, as device vendors and Kepware/Neuron point
 * tables give them) → tags of the site configuration (ModbusTag of
 * schema.ts), for `linekeeper discover modbus --csv`. Every row is validated
 * with the configuration's own schema and checks (UCUM unit, a setpoint in a
 * holding register, range, duplicate names, overlapping registers); any bad
 * row fails the whole table with LK_TAG_TABLE_INVALID naming the line and the
 * column — nothing is half-imported. Pure: text in, tags or an error out.
 *
 * Header (first non-comment line; column order free, names case-insensitive):
 *   name,kind,table,address,type,unit            required
 *   scale,offset,byte_order,word_order,min,max,readback_tolerance,description   optional
 * `address` is the zero-based protocol address (not 4xxxx notation); `min`
 * and `max` together are the instrument range. Lines starting with `#` and
 * blank lines are skipped. Fields may be quoted ("…", "" for a quote).
 */
import { LkError } from '../errors.js';
import { isValidUnit } from '../domain/units.js';
import { ModbusTag, type ModbusTagConfig } from './schema.js';

export const REQUIRED_COLUMNS = ['name', 'kind', 'table', 'address', 'type', 'unit'] as const;
export const OPTIONAL_COLUMNS = ['scale', 'offset', 'byte_order', 'word_order', 'min', 'max', 'readback_tolerance', 'description'] as const;
const COLUMNS: ReadonlySet<string> = new Set([...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS]);
const NUMBER_COLUMNS: ReadonlySet<string> = new Set(['address', 'scale', 'offset', 'min', 'max', 'readback_tolerance']);
const WIDTH: Record<ModbusTagConfig['type'], number> = { int16: 1, uint16: 1, int32: 2, uint32: 2, float32: 2, float64: 4 };
/** A register table is a few hundred rows; more is not one. */
export const MAX_ROWS = 10_000;

export interface TableIssue {
  readonly line: number;
  readonly column?: string;
  readonly message: string;
}

export interface ImportedTag {
  readonly tag: ModbusTagConfig;
  readonly line: number;
}

interface Row {
  line: number;
  cells: string[];
}

/** RFC 4180 records with the line each starts on; a quoted field may span lines. */
function parseCsv(text: string, name: string): Row[] {
  const rows: Row[] = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let startLine = 1;
  let fieldStarted = false;
  const endRow = (): void => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0]!.trim() === '')) rows.push({ line: startLine, cells });
    cells = [];
    cell = '';
    fieldStarted = false;
  };
  const src = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (quoted) {
      if (c === '"' && src[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else {
        if (c === '\n') line++;
        cell += c;
      }
      continue;
    }
    if (!fieldStarted && cells.length === 0 && cell === '' && c === '#') {
      // a comment line: skip to its end
      while (i < src.length && src[i] !== '\n') i++;
      line++;
      startLine = line;
      continue;
    }
    if (c === '"' && cell.trim() === '') {
      quoted = true;
      cell = '';
      fieldStarted = true;
    } else if (c === ',') {
      cells.push(cell);
      cell = '';
      fieldStarted = true;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && src[i + 1] === '\n') i++;
      endRow();
      line++;
      startLine = line;
    } else {
      cell += c;
      fieldStarted = true;
    }
  }
  if (quoted) throw new LkError('LK_TAG_TABLE_INVALID', `${name}:${startLine}: a quoted field is not closed`, { file: name, issues: [{ line: startLine, message: 'a quoted field is not closed' }] });
  if (cell !== '' || cells.length > 0) endRow();
  return rows;
}

/**
 * The tags of a register table.
 * @throws LkError LK_TAG_TABLE_INVALID naming `file:line: column "x": …` for every bad row (detail.issues).
 */
export function importRegisterTable(text: string, name: string): ImportedTag[] {
  const rows = parseCsv(text, name);
  const fail = (issues: TableIssue[]): never => {
    const lines = issues.map((i) => `${name}:${i.line}: ${i.column ? `column "${i.column}": ` : ''}${i.message}`);
    throw new LkError('LK_TAG_TABLE_INVALID', lines.join('\n'), { file: name, issues });
  };
  const header = rows.shift();
  if (!header) return fail([{ line: 1, message: `no header line (expected ${REQUIRED_COLUMNS.join(',')},…)` }]);
  const columns = header.cells.map((c) => c.trim().toLowerCase());
  const headIssues: TableIssue[] = [];
  columns.forEach((c, i) => {
    if (!COLUMNS.has(c)) headIssues.push({ line: header.line, column: c || `#${i + 1}`, message: `unknown column (columns: ${[...REQUIRED_COLUMNS, ...OPTIONAL_COLUMNS].join(', ')})` });
    else if (columns.indexOf(c) !== i) headIssues.push({ line: header.line, column: c, message: 'column given twice' });
  });
  for (const r of REQUIRED_COLUMNS) if (!columns.includes(r)) headIssues.push({ line: header.line, column: r, message: 'required column missing' });
  if (headIssues.length) fail(headIssues);
  if (rows.length > MAX_ROWS) fail([{ line: rows[MAX_ROWS]!.line, message: `more than ${MAX_ROWS} rows` }]);

  const issues: TableIssue[] = [];
  const out: ImportedTag[] = [];
  const names = new Map<string, number>();
  const registers = new Map<string, { line: number; name: string }>();
  for (const row of rows) {
    const rowIssues: TableIssue[] = [];
    const add = (column: string | undefined, message: string): void => {
      rowIssues.push({ line: row.line, ...(column ? { column } : {}), message });
    };
    if (row.cells.length !== columns.length) add(undefined, `${row.cells.length} fields, the header has ${columns.length}`);
    const raw: Record<string, unknown> = {};
    columns.forEach((c, i) => {
      const v = (row.cells[i] ?? '').trim();
      if (v === '') return;
      if (NUMBER_COLUMNS.has(c)) {
        const n = Number(v);
        if (!Number.isFinite(n) || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) add(c, `"${v}" is not a number`);
        else raw[c] = n;
      } else raw[c] = v;
    });
    const { min, max, ...rest } = raw;
    if ((min === undefined) !== (max === undefined) && !rowIssues.some((i) => i.column === 'min' || i.column === 'max')) add(min === undefined ? 'min' : 'max', 'min and max go together (the instrument range)');
    const candidate = { ...rest, ...(min !== undefined && max !== undefined ? { range: { min, max } } : {}) };
    if (rowIssues.length === 0) {
      const parsed = ModbusTag.safeParse(candidate);
      if (!parsed.success) {
        for (const i of parsed.error.issues) {
          const col = i.path[0] === 'range' ? String(i.path[1] ?? 'min') : String(i.path[0] ?? '');
          add(col || undefined, /received undefined/.test(i.message) ? 'required' : i.message);
        }
      } else {
        const t = parsed.data;
        if (!isValidUnit(t.unit)) add('unit', `unknown unit "${t.unit}" (expected a UCUM code such as kN, mm, Cel, g/min, {rev}/min)`);
        if (t.kind === 'setpoint' && t.table !== 'holding') add('table', 'a setpoint must be a holding register (input registers are read-only)');
        if (t.range && !(t.range.min < t.range.max)) add('min', `min (${t.range.min}) must be below max (${t.range.max})`);
        const width = WIDTH[t.type];
        if (t.address + width > 65536) add('address', `register ${t.address}+${width} runs past 65535`);
        const prev = names.get(t.name);
        if (prev !== undefined) add('name', `duplicate tag "${t.name}" (also on line ${prev})`);
        if (rowIssues.length === 0) {
          names.set(t.name, row.line);
          for (let r = t.address; r < t.address + width; r++) {
            const k = `${t.table}|${r}`;
            const other = registers.get(k);
            if (other) {
              add('address', `register ${t.table} ${r} overlaps ${other.name} (line ${other.line})`);
              break;
            }
          }
          if (rowIssues.length === 0) {
            for (let r = t.address; r < t.address + width; r++) registers.set(`${t.table}|${r}`, { line: row.line, name: t.name });
            out.push({ tag: t, line: row.line });
          }
        }
      }
    }
    issues.push(...rowIssues);
  }
  if (issues.length) fail(issues);
  return out;
}

/** A tag as written in the configuration: defaults (BE, scale 1, offset 0) left out, in the order of site.yaml. */
export function compactModbusTag(t: ModbusTagConfig): Record<string, unknown> {
  return {
    name: t.name,
    kind: t.kind,
    unit: t.unit,
    table: t.table,
    address: t.address,
    type: t.type,
    ...(t.scale !== 1 ? { scale: t.scale } : {}),
    ...(t.offset !== 0 ? { offset: t.offset } : {}),
    ...(t.byte_order !== 'BE' ? { byte_order: t.byte_order } : {}),
    ...(t.word_order !== 'BE' ? { word_order: t.word_order } : {}),
    ...(t.range ? { range: t.range } : {}),
    ...(t.readback_tolerance !== undefined ? { readback_tolerance: t.readback_tolerance } : {}),
    ...(t.description !== undefined ? { description: t.description } : {}),
  };
}
