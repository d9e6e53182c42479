/**
 * The configuration specification as people read it in the PDF of a `config report`: printed from the report's own
 * `data` (what is signed), never from the live configuration, so the paper says exactly what the JSON says. The
 * parts a reviewer checks line by line get tables (equipment and tags, design spaces, agents, users, models); every
 * other setting of the configuration — whatever keys it has, known to this code or not — is listed by its path.
 */
import type { PdfReport } from '../audit/pdfa.js';
import type { Json } from '../audit/entry.js';
import { changeLine, shownValue, type DataChange } from './data-diff.js';
import type { ReportSections } from './report.js';

type Obj = { [key: string]: Json };
const obj = (v: Json | undefined): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? v : {});
const arr = (v: Json | undefined): Json[] => (Array.isArray(v) ? v : []);
const text = (v: Json | undefined): string => (v === undefined || v === null ? '-' : shownValue(v, 400));

/** `{ a: { b: 1 }, c: [x] }` → `[['a.b', '1'], ['c', '["x"]']]`: every leaf of an object by its path (lists as one value). */
function leaves(v: Json, path: string, out: [string, string][] = []): [string, string][] {
  const o = v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  if (o && Object.keys(o).length === 0 && path === '') return out;
  if (!o || Object.keys(o).length === 0) out.push([path, text(v)]);
  else for (const [k, x] of Object.entries(o)) leaves(x, path ? `${path}.${k}` : k, out);
  return out;
}

/** The settings of `o` other than `skip`, as one line each. */
const settings = (o: Obj, skip: readonly string[] = []): string => leaves(Object.fromEntries(Object.entries(o).filter(([k]) => !skip.includes(k))), '').map(([k, v]) => `${k} ${v}`).join('; ');

/** The tag table of an equipment; a tag's description is printed after it, where it has the page's width. */
function printTags(r: PdfReport, e: Obj): void {
  const tags = arr(e['tags']).map(obj);
  const opcua = tags.some((t) => t['node_id'] !== undefined);
  r.table(['Tag', 'Kind', opcua ? 'Node id' : 'Register', 'Type', 'Unit', 'Range', 'Other settings'], [88, 58, opcua ? 150 : 70, 56, 40, 46, '*'], tags.map((t) => {
    const where = t['node_id'] !== undefined ? text(t['node_id']) : `${text(t['table'])} ${text(t['address'])}`;
    const type = t['data_type'] !== undefined ? text(t['data_type']) : `${text(t['type'])}${t['byte_order'] !== undefined ? ` ${text(t['byte_order'])}/${text(t['word_order'])}` : ''}`;
    const range = t['range'] ? `${text(obj(t['range'])['min'])} … ${text(obj(t['range'])['max'])}` : '-';
    return [text(t['name']), text(t['kind']), { text: where, mono: true }, type, text(t['unit']), range, settings(t, ['name', 'kind', 'node_id', 'table', 'address', 'data_type', 'type', 'byte_order', 'word_order', 'unit', 'range', 'description']) || '-'];
  }));
  for (const t of tags.filter((x) => x['description'] !== undefined)) r.line(`${text(t['name'])}: ${text(t['description'])}`);
}

function printChanges(r: PdfReport, d: Obj): void {
  const changes = arr(d['changes']) as unknown as DataChange[];
  r.heading(`Changes since the previous report (${changes.length})`);
  r.line(`Previous report: ${text(d['file'])}, signed by ${text(d['signedBy'])} at ${text(d['signedAt'])}, result ${text(d['result'])}; its signature verified with this site's key before the comparison.`);
  r.exact('Previous record (SHA-256)', text(d['recordHash']));
  r.line(`Configuration SHA-256 then ${text(d['configSha256'])}; policy bundle then ${text(d['policyVersion'])}.`);
  if (changes.length === 0) r.line('No change of the specification.', { bold: true });
  else {
    r.line('~ changed (before → after), + added, - removed; a path\'s [key] is the element of a list with that id or name.');
    for (const c of changes) r.line(changeLine(c));
  }
}

function printPolicy(r: PdfReport, p: Obj): void {
  r.heading('Policy bundle');
  if (p['error']) {
    r.line(`Not compiled: ${text(obj(p['error'])['message'])} [${text(obj(p['error'])['code'])}]`, { bold: true });
    return;
  }
  const ch = obj(p['change']);
  const sig = obj(p['signature']);
  const content = obj(p['content']);
  r.exact('Version (SHA-256 of its canonical content)', text(p['version']));
  r.line(`Change record: ${text(ch['change_ref'])} approved by ${text(obj(ch['approver'])['name'])} (${text(obj(ch['approver'])['role'])}) on ${text(ch['date'])}: ${text(ch['reason'])}`);
  r.line(sig['status'] === 'verified'
    ? `Signature: verified — ${text(obj(sig['signer'])['id'])} (${text(obj(sig['signer'])['role'])}) under ${text(sig['changeRef'])} at ${text(sig['signedAt'])}, key ${text(sig['keyId'])}, site audit seq ${text(sig['auditSeq'])}`
    : `Signature: REFUSED — ${text(sig['message'])} [${text(sig['code'])}]`, sig['status'] === 'verified' ? {} : { bold: true });
  r.line(`Approvers: ${leaves(content['approvers'] ?? null, '').map(([k, v]) => `${k} ${v}`).join('; ')}. Autonomy raises: ${leaves(content['raiseRoles'] ?? null, '').map(([k, v]) => `${k} by ${v}`).join('; ')}.`);
  r.line(`Thresholds: ${settings(content, ['format', 'site', 'approvers', 'raiseRoles', 'setpoints', 'agents', 'designSpaces'])}`);
  const setpoints = obj(content['setpoints']);
  for (const ds0 of Object.values(obj(content['designSpaces']))) {
    const ds = obj(ds0);
    r.heading(`Design space ${text(ds['product'])} × ${text(ds['tooling'])}`);
    r.line(`Approved by ${text(ds['approvedBy'])}. Limits in the setpoint's unit; "as declared" when design-space.yaml wrote another unit.`);
    r.table(['Setpoint', 'Min', 'Max', 'Unit', 'Max step', 'Max rate /min', 'As declared', 'Validated', 'Low risk', 'Ceiling'], [108, 30, 30, 44, 35, 40, '*', 46, 38, 34],
      Object.entries(obj(ds['setpoints'])).map(([id, l0]) => {
        const l = obj(l0);
        const d = obj(l['declared']);
        const s = obj(setpoints[id]);
        const declared = d['unit'] !== undefined && d['unit'] !== l['unit'] ? `${text(d['min'])} … ${text(d['max'])} ${text(d['unit'])}` : '-';
        return [id, text(l['min']), text(l['max']), text(l['unit']), text(l['maxStep']), text(l['maxRatePerMin']), declared, s['validated'] ? 'yes' : 'no', s['lowRisk'] ? 'yes' : 'no', text(s['autonomy'])];
      }));
  }
  r.heading('Agents: autonomy and allow-lists');
  r.table(['Agent', 'Autonomy', 'Model family', 'Allow-list (setpoints it may move)'], [110, 50, 80, '*'],
    Object.entries(obj(content['agents'])).map(([id, a0]) => {
      const a = obj(a0);
      return [id, text(a['autonomy']), text(a['modelFamily']), arr(a['allow']).map((x) => text(x)).join(', ') || '(read-only)'];
    }));
  r.heading('Setpoint autonomy ceilings');
  r.table(['Setpoint', 'Equipment', 'Unit', 'Instrument range', 'Validated', 'Low risk', 'Ceiling'], [110, 60, 50, '*', 45, 45, 45],
    Object.entries(setpoints).map(([id, s0]) => {
      const s = obj(s0);
      const ir = s['instrumentRange'] ? `${text(obj(s['instrumentRange'])['min'])} … ${text(obj(s['instrumentRange'])['max'])}` : '-';
      return [id, text(s['equipment']), text(s['unit']), ir, s['validated'] ? 'yes' : 'no', s['lowRisk'] ? 'yes' : 'no', text(s['autonomy'])];
    }));
}

/** The kind's own sections of a configuration report, from its `data`. */
export function configReportSections(data: Obj): ReportSections {
  return (r) => {
    const src = obj(data['source']);
    const cfg = obj(data['configuration']);
    r.heading('Configuration reported');
    r.exact('Configuration file', text(src['configFile']));
    r.exact('Configuration (SHA-256 of its canonical JSON, as audited at start)', text(src['configSha256']));
    r.exact('Policy bundle folder', text(src['policyDir']));
    r.line(`Secrets are never printed: a password, token or key file that is configured shows as "(set)".`);
    if (data['diffAgainst']) printChanges(r, obj(data['diffAgainst']));

    const site = obj(cfg['site']);
    const line = obj(cfg['line']);
    r.heading('Site and line');
    r.line(`Site ${text(site['id'])}: ${text(site['name'])}; time zone ${text(site['timezone'])}.`);
    r.line(`Line ${text(line['id'])}: ${text(line['name'])}; equipment in process order: ${arr(line['equipment']).map((x) => text(x)).join(' → ')}.${line['phase'] ? ` Phase: ${settings(obj(line['phase']))}.` : ''}`);
    r.table(['Tenant', 'Name', 'Products'], [100, 180, '*'], arr(cfg['tenants']).map((t) => [text(obj(t)['id']), text(obj(t)['name']), arr(obj(t)['products']).map((x) => text(x)).join(', ')]));
    r.table(['Product', 'Name', 'Tooling'], [100, 250, '*'], arr(cfg['products']).map((p) => [text(obj(p)['id']), text(obj(p)['name']), arr(obj(p)['tooling']).map((x) => text(x)).join(', ')]));
    r.table(['Tooling', 'Name', 'Punch diameter (mm)'], [100, 250, '*'], arr(cfg['tooling']).map((t) => [text(obj(t)['id']), text(obj(t)['name']), text(obj(t)['punch_diameter_mm'])]));

    r.heading('Connections');
    r.table(['Connection', 'Protocol', 'Endpoint', 'Settings'], [80, 50, 150, '*'], arr(cfg['connections']).map((c0) => {
      const c = obj(c0);
      return [text(c['id']), text(c['protocol']), { text: text(c['endpoint']), mono: true }, settings(c, ['id', 'protocol', 'endpoint']) || '-'];
    }));
    for (const e0 of arr(cfg['equipment'])) {
      const e = obj(e0);
      r.heading(`Equipment ${text(e['id'])} — ${text(e['name'])}`);
      r.line(`${text(e['type'])} over ${text(e['protocol'])} (connection ${text(e['connection'])}${e['unit_id'] !== undefined ? `, unit id ${text(e['unit_id'])}` : ''}); heartbeat ${settings(obj(e['heartbeat']))}; supervision ${e['supervision'] ? settings(obj(e['supervision'])) : 'supervised (default state values)'}.`);
      printTags(r, e);
    }
    r.heading('Equipment roles (what the run engine, the agents and the twin address → this site\'s tag)');
    r.table(['Role', 'Site tag'], [200, '*'], Object.entries(obj(data['roles'])).map(([role, tag]) => [role, text(tag)]));

    printPolicy(r, obj(data['policy']));

    r.heading('Users and roles (local accounts; no password or hash is part of this report)');
    r.table(['User', 'Name', 'Role', 'Tenants', 'Status', 'Created'], [68, 85, 62, '*', 38, 118], arr(data['users']).map((u0) => {
      const u = obj(u0);
      return [text(u['id']), text(u['name']), text(u['role']), arr(u['tenants']).map((x) => text(x)).join(', '), u['disabled'] ? 'disabled' : 'active', `${text(u['createdAt'])} by ${text(u['createdBy'])}`];
    }));

    r.heading('Models and their cards');
    const models = Object.entries(obj(data['models'])).flatMap(([tenant, list]) => arr(list).map((m) => [tenant, obj(m)] as const));
    r.table(['Tenant', 'Model', 'Status', 'Sites', 'SHA-256 of the artefact', 'Last change'], [65, 95, 45, 60, 85, '*'], models.map(([tenant, m]) => [
      tenant, `${text(m['id'])} (${text(m['kind'])})`, text(m['status']), arr(m['sites']).map((x) => text(x)).join(', ') || '-',
      { text: `${text(m['sha256']).slice(0, 16)}…`, mono: true }, `${text(m['changedAt'])} by ${text(m['changedBy'])}${m['changeRef'] ? ` (${text(m['changeRef'])})` : ''}`,
    ]));
    for (const [tenant, m] of models) {
      const card = obj(m['card']);
      const figures = Object.entries(obj(card['metrics'])).map(([k, v]) => `${k} ${typeof v === 'number' ? Number(v.toPrecision(4)) : text(v)}`).join(', ');
      r.line(`${tenant}/${text(m['id'])}: ${text(card['intendedUse'])} Trained on ${text(obj(card['trainingData'])['samples'])} samples (${text(obj(card['trainingData'])['summary'])}). Figures: ${figures || 'none'}.`);
    }

    const api = obj(cfg['api']);
    r.heading('REST API and single sign-on (OIDC)');
    r.table(['Setting', 'Value'], [200, '*'], leaves(Object.fromEntries(Object.entries(api).filter(([k]) => k !== 'oidc')), 'api').map(([k, v]) => [k, v]));
    if (api['oidc']) r.table(['OIDC setting', 'Value'], [200, '*'], leaves(api['oidc'], 'api.oidc').map(([k, v]) => [k, v]));
    else r.line('OIDC: not configured (local users only).');
    r.heading('MQTT (Sparkplug B)');
    if (cfg['mqtt']) r.table(['Setting', 'Value'], [200, '*'], leaves(cfg['mqtt'], 'mqtt').map(([k, v]) => [k, v]));
    else r.line('Not configured: nothing is published.');

    const shown = ['site', 'line', 'tenants', 'products', 'tooling', 'connections', 'equipment', 'api', 'mqtt'];
    r.heading('Further settings of the configuration');
    r.table(['Setting', 'Value'], [200, '*'], leaves(Object.fromEntries(Object.entries(cfg).filter(([k]) => !shown.includes(k))), '').map(([k, v]) => [k, v]));
  };
}
