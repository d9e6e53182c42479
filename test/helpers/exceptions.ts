/**
 * Review by exception in tests that go on to release a batch: a batch may raise exceptions (an excursion, a
 * trend, a PLC that lapsed), and a release waits until a QA reviewer has closed each
 * with a comment. These close every open one as the named reviewer would — in process through the engine, or
 * over the REST API with the reviewer's token and password — and return how many they closed.
 */
import type { RunEngine } from '../../src/engine/run/engine.js';

export const QA_SIGNER = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' } as const;
const COMMENT = 'investigated under the batch deviation; the tablets of the excursion were segregated';

export function closeOpenExceptions(engine: RunEngine, tenant: string, run: string, signer: { user: string; name: string; role: string } = QA_SIGNER): number {
  const open = engine.exceptionsOf(tenant, run).filter((e) => e.status === 'open');
  for (const e of open) engine.closeException(tenant, e.id, { signer, comment: `${e.kind}: ${COMMENT}`, deviation: 'DEV-2026-0142' });
  return open.length;
}

export async function closeOpenExceptionsOverApi(url: string, token: string, tenant: string, run: string, password: string): Promise<number> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const list = (await (await fetch(`${url}/v1/tenants/${tenant}/runs/${run}/exceptions`, { headers })).json()) as { items: { id: string; kind: string; status: string }[] };
  const open = list.items.filter((e) => e.status === 'open');
  for (const e of open) {
    const r = await fetch(`${url}/v1/tenants/${tenant}/exceptions/${e.id}/close`, { method: 'POST', headers, body: JSON.stringify({ comment: `${e.kind}: ${COMMENT}`, deviation: 'DEV-2026-0142', password }) });
    if (r.status !== 200) throw new Error(`closing ${e.id}: HTTP ${r.status} ${await r.text()}`);
  }
  return open.length;
}
