/**
 * The requirement trace of an IQ or OQ report: every requirement of the shipped matrix (validation/traceability.json, made
 * by `npm run traceability` from validation/requirements.yaml and the tests' tags) with the checks or cases executed on this
 * node for it and their results, the number of the supplier's automated tests traced to it (evidence from the
 * release build, not executed here, and said so), or the procedure it leaves to the site.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PdfReport } from '../audit/pdfa.js';
import type { Json } from '../audit/entry.js';
import type { ReportCheck } from './report.js';

interface Matrix {
  requirements: { id: string; text: string; status: string; procedure: string | null; tests: { file: string; title: string }[] }[];
}

export interface TraceRow {
  id: string;
  status: string;
  text: string;
  /** The IQ checks or OQ cases executed on this node for it, and their results. */
  executed: { case: string; result: string }[];
  supplierTests: number;
  procedure?: string;
  /** executed: pass | executed: FAIL | supplier tests | procedural | none */
  evidence: string;
}

/** The trace of `checks` against the matrix installed under `root`. */
export function traceData(root: string, checks: readonly ReportCheck[]): { [key: string]: Json } {
  let matrix: Matrix;
  try {
    matrix = JSON.parse(readFileSync(join(root, 'validation', 'traceability.json'), 'utf8')) as Matrix;
  } catch {
    return { trace: null, note: 'validation/traceability.json is not installed: the requirement trace is missing' };
  }
  const trace: TraceRow[] = matrix.requirements.map((q) => {
    const here = checks.filter((c) => c.requirements.includes(q.id));
    return {
      id: q.id, status: q.status, text: q.text,
      executed: here.map((c) => ({ case: c.id, result: c.status })),
      supplierTests: q.tests.length,
      ...(q.procedure ? { procedure: q.procedure } : {}),
      evidence: here.length > 0 ? (here.every((c) => c.status === 'pass') ? 'executed: pass' : 'executed: FAIL') : q.tests.length > 0 ? 'supplier tests' : q.status === 'procedural' ? 'procedural' : 'none',
    };
  });
  return {
    trace: trace as unknown as Json,
    figures: { requirements: trace.length, executedHere: trace.filter((t) => t.executed.length > 0).length, supplierOnly: trace.filter((t) => t.evidence === 'supplier tests').length, procedural: trace.filter((t) => t.evidence === 'procedural').length, none: trace.filter((t) => t.evidence === 'none').length },
    supplierEvidence: 'supplierTests counts the automated tests of linekeeper\'s release build traced to the requirement (docs/traceability.md); they are not executed by this qualification',
  };
}

/** The trace as a PDF section. */
export function traceSections(r: PdfReport, data: { [key: string]: Json }): void {
  const trace = data['trace'] as unknown as TraceRow[] | null;
  r.heading(`Requirement trace (${trace?.length ?? 0} requirements)`);
  if (!trace) {
    r.line(String(data['note'] ?? 'no trace'));
    return;
  }
  r.line(String(data['supplierEvidence']), { size: 7.5 });
  r.table(['Requirement', 'Status', 'Executed here', 'Supplier tests', 'Evidence'], [70, 60, 150, 50, '*'], trace.map((t) => [
    t.id, t.status, t.executed.map((o) => `${o.case} ${o.result}`).join(', ') || '-', String(t.supplierTests), t.evidence === 'procedural' && t.procedure ? `procedural: ${t.procedure}` : t.evidence,
  ]));
}
