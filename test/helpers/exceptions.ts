/**
 * Review by exception in tests that go on to release a batch: a batch may raise exceptions (an excursion, a
 * trend, a PLC that lapsed), and a release waits until a QA reviewer has closed each
 * with a comment. These close every open one as the named reviewer would — in process through the engine, or
 * over the REST API with the reviewer's token and password — and return how many they closed.
 */
import type { RunEngine } from '../../src/engine/run/engine.js';
import { call } from './api.js';

export const QA_SIGNER = { user: 'm.rossi', name: 'Maria Rossi', role: 'qa_reviewer' } as const;
const COMMENT = 'investigated under the batch deviation; the tablets of the excursion were segregated';

export function closeOpenExceptions(engine: RunEngine, tenant: string, run: string, signer: { user: string; name: string; role: string } = QA_SIGNER): number {
  const open = engine.exceptionsOf(tenant, run).filter((e) => e.status === 'open');
  for (const e of open) engine.closeException(tenant, e.id, { signer, comment: `${e.kind}: ${COMMENT}`, deviation: 'DEV-2026-0142' });
  return open.length;
}

/** Over the REST API through call(), so each answer is also checked against the OpenAPI document. */
export async function closeOpenExceptionsOverApi(url: string, token: string, tenant: string, run: string, password: string): Promise<number> {
  const list = await call(url, 'GET', `/v1/tenants/${tenant}/runs/${run}/exceptions`, { token });
  if (list.status !== 200) throw new Error(`listing the exceptions of ${run}: HTTP ${list.status} ${JSON.stringify(list.body)}`);
  const open = (list.body as { items: { id: string; kind: string; status: string }[] }).items.filter((e) => e.status === 'open');
  for (const e of open) {
    const r = await call(url, 'POST', `/v1/tenants/${tenant}/exceptions/${e.id}/close`, { token, body: { comment: `${e.kind}: ${COMMENT}`, deviation: 'DEV-2026-0142', password } });
    if (r.status !== 200) throw new Error(`closing ${e.id}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  }
  return open.length;
}
