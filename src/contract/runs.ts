/**
 * The wire contract of runs: the zod schemas of what the REST API answers about a run — the run and its steps,
 * their exception markers, a page of runs, the tool-call log line (the data of an SSE event), the genealogy, a
 * run's exceptions, the approvals waiting for a person and the signatures that decide them, and the acts that
 * end or reassign a run — with their types inferred from them. One definition serves three sides: the engine
 * builds values of these types (no interface of its own), the API's routes use these schemas as their response
 * schemas (so the OpenAPI document is generated from them), and the SDK's run types are these types.
 *
 * Pure and small on purpose (zod and src/domain only, no I/O): the SDK ships it to agent authors.
 */
import { z } from 'zod';
import { RUN_STATUSES, STEP_STATUSES } from '../domain/run.js';

/** A time on the wire: ISO 8601 in UTC. */
export const IsoTime = z.string().describe('ISO 8601 UTC');
const iso = IsoTime;

export const ExceptionMarker = z.object({
  total: z.number().int(), open: z.number().int(), blocking: z.number().int().describe('open and critical or major: a batch release waits for these to be closed'),
  kinds: z.array(z.string()),
}).describe('the exceptions raised in this step (or run): a step that SUCCEEDED with exceptions is not a plain success');
/** How many exceptions, open, open and blocking a release (critical or major), and of which kinds. */
export type ExceptionMarker = z.output<typeof ExceptionMarker>;

export const StepView = z.object({
  seq: z.string().describe('two-digit position in the plan: 01 … 10'),
  name: z.string().describe('dotted step name: ingest.batch_record … release.genealogy'),
  agent: z.string(), tool: z.string(), status: z.enum(STEP_STATUSES),
  gate: z.boolean().describe('the QA approval gate of the run'),
  attempt: z.number().int().describe('1, or more after a named person resumed the step'),
  durationMs: z.number().nullable(),
  duration: z.string().describe('as the spec renders it: 4.2s, 2:05, continuous for inspection, empty before the step started'),
  detail: z.string().describe('what the step did, in words'),
  exceptions: ExceptionMarker,
});
/** A step of a run as the API shows it. */
export type StepView = z.output<typeof StepView>;

export const ApprovalGateView = z.object({
  id: z.string().nullable(), step: z.string(), status: z.string(), reviewer: z.string().nullable(), recordHash: z.string().nullable(),
  requestedAt: iso.nullable(), signature: z.record(z.string(), z.unknown()).nullable(),
});
export type ApprovalGateView = z.output<typeof ApprovalGateView>;

export const ReleaseFiles = z.object({
  json: z.string().describe('download URL of release.json (GET …/runs/{id}/release?file=json)'), pdf: z.string().describe('download URL of release.pdf'),
  bundle: z.string().describe('download URL of the audit bundle (JSONL)'), sha256: z.record(z.string(), z.string()),
}).nullable().describe('the release package: download URLs and SHA-256 of its files (null until step 10 wrote it)');
export type ReleaseFiles = z.output<typeof ReleaseFiles>;

export const RunView = z
  .object({
    id: z.string(), tenant: z.string(), batch: z.string(), line: z.string(), product: z.string(), tooling: z.string(), status: z.enum(RUN_STATUSES),
    goal: z.string(), autonomy: z.string(), startedBy: z.string(), createdAt: iso, endedAt: iso.nullable(), reason: z.string().nullable(),
    plan: z.object({ steps: z.number().int(), gates: z.number().int(), text: z.string() }),
    steps: z.array(StepView),
    exceptions: ExceptionMarker,
    approvalGate: ApprovalGateView,
    genealogy: z.string().describe('path of the genealogy'),
    release: ReleaseFiles,
  })
  .meta({ id: 'Run' });
/** A run as GET /runs/{id} returns it: ordered steps, the approval gate, the genealogy pointer. */
export type RunView = z.output<typeof RunView>;

export const RunPage = z.object({ items: z.array(RunView), next: z.string().optional() });
export type RunPage = z.output<typeof RunPage>;

/** One line of the tool-call log: the `data` of an SSE event. */
export const ToolCallLine = z
  .object({
    id: z.number().int(), run: z.string(), at: z.number().int().describe('epoch ms'), time: z.string().describe('HH:MM:SS UTC'), kind: z.enum(['call', 'ok', 'error']),
    step: z.string(), agent: z.string(), tool: z.string(), args: z.unknown().optional(), summary: z.string().optional(), result: z.unknown().optional(), auditSeq: z.number().int(),
  })
  .meta({ id: 'ToolCallLine' });
export type ToolCallLine = z.output<typeof ToolCallLine>;

export const GenealogyView = z.object({
  run: z.string(), batch: z.string(), status: z.enum(RUN_STATUSES),
  events: z.array(z.object({ id: z.number().int(), at: iso, kind: z.string(), step: z.string().nullable(), agent: z.string().nullable(), tag: z.string().nullable(), summary: z.string(), data: z.unknown() })),
  losingRequests: z.array(z.object({ at: iso, agent: z.string(), setpoint: z.string(), score: z.number(), reason: z.string() })),
  release: ReleaseFiles,
});
export type GenealogyView = z.output<typeof GenealogyView>;

export const ExceptionView = z.object({
  id: z.string(), run: z.string(), batch: z.string(), kind: z.string(), severity: z.enum(['critical', 'major', 'minor']),
  blocking: z.boolean().describe('open and critical or major: the batch release waits until it is closed'),
  status: z.enum(['open', 'closed']), step: z.string().nullable(), title: z.string(), evidence: z.record(z.string(), z.unknown()),
  raisedAt: z.string(), raisedBy: z.string(), auditSeq: z.number().int(),
  closure: z.object({ user: z.string(), name: z.string(), at: z.string(), comment: z.string(), deviation: z.string().nullable(), signed: z.boolean() }).nullable(),
}).meta({ id: 'Exception' });
/** An exception (deviation) of a run, with its evidence and its closure. */
export type ExceptionView = z.output<typeof ExceptionView>;

export const ExceptionList = z.object({
  run: z.string(), batch: z.string(),
  counts: z.object({ total: z.number().int(), open: z.number().int(), blocking: z.number().int() }),
  items: z.array(ExceptionView),
  specTable: z.unknown().nullable().describe('the specification table of the run (every specification with its data and verdict), once evaluated before the gate'),
});
export type ExceptionList = z.output<typeof ExceptionList>;
export const CloseExceptionView = z.object({ exception: ExceptionView, signature: z.record(z.string(), z.unknown()).nullable() });
export type CloseExceptionView = z.output<typeof CloseExceptionView>;

export const ApprovalItem = z.object({
  id: z.string(), kind: z.enum(['batch_release', 'setpoint_write']), run: z.string().nullable(), batch: z.string().nullable(), needs: z.string(),
  reviewer: z.string().nullable(), requestedAt: iso, recordHash: z.string().nullable(), detail: z.record(z.string(), z.unknown()),
});
export type ApprovalItem = z.output<typeof ApprovalItem>;
export const ApprovalList = z.object({ items: z.array(ApprovalItem) });
export type ApprovalList = z.output<typeof ApprovalList>;

export const SignatureView = z.object({
  format: z.literal(1), approval: z.string(), run: z.string(), tenant: z.string(), batch: z.string(), recordHash: z.string(), user: z.string(), name: z.string(), role: z.string(),
  decision: z.enum(['approve', 'reject']), meaning: z.string().describe('the words the signer chose from the site\'s signature meanings, filled for the record'),
  meaningId: z.string().optional().describe('the id of that signature meaning (absent on signatures made before meanings were a controlled list)'),
  comment: z.string().optional().describe('what the signer wrote beside the meaning'),
  timestamp: iso, keyId: z.string(), signature: z.string(),
  reviewed: z.object({ exceptions: z.array(z.string()), exceptionsClosed: z.array(z.string()), specTableSha256: z.string().nullable() }).optional()
    .describe('what the reviewer had before them when signing a batch release (covered by the signature): every exception of the run, those closed, and the specification table\'s hash'),
});
/** A Part 11 signature of a decision: identity, meaning, time, bound to the record hash. */
export type SignatureView = z.output<typeof SignatureView>;

/** What the guarded writer can do with a setpoint write (the engine's WriteStatus is this list). */
export const WRITE_STATUSES = ['written', 'denied', 'recommended', 'pending', 'declined', 'escalated', 'failed', 'reverted', 'rejected'] as const;
export const WriteDecisionView = z.object({
  kind: z.literal('setpoint_write'),
  signature: SignatureView.describe('the signed decision; verify it as it is (Ed25519 over its canonical record without signature and keyId)'),
  outcome: z.object({
    status: z.enum(WRITE_STATUSES).describe('written once approved and allowed at call time; rejected; denied when the policy in force refuses it now'),
    proposal: z.string(), vectorHash: z.string().nullable(), reasons: z.array(z.string()),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    readBack: z.array(z.object({ tag: z.string(), written: z.number(), readBack: z.number().nullable(), verified: z.boolean() })).optional()
      .describe('each tag written, in its unit, and what the equipment read back after the write (written only)'),
  }),
});
export type WriteDecisionView = z.output<typeof WriteDecisionView>;

/** The Part 11 signature of an abort or a reassignment (src/engine/run/lifecycle.ts). */
export const ActSignatureView = z.object({
  format: z.literal(1), approval: z.string(), run: z.string(), tenant: z.string(), batch: z.string(), recordHash: z.string(), user: z.string(), name: z.string(), role: z.string(),
  decision: z.enum(['abort', 'reassign']), meaning: z.string(), meaningId: z.string().optional().describe('the id of the site\'s signature meaning signed'),
  timestamp: iso, keyId: z.string(), signature: z.string(),
});
export type ActSignatureView = z.output<typeof ActSignatureView>;
export const AbortView = z.object({
  run: RunView,
  reverted: z.array(z.object({ equipment: z.string(), ok: z.boolean().describe('true only when the read-back shows the PLC LOST on its last known-good recipe'), state: z.string().optional(), error: z.string().optional() })),
  approvalWithdrawn: z.string().nullable().describe('the approval gate withdrawn (no longer signable), if one was pending'),
  signature: ActSignatureView,
});
export type AbortView = z.output<typeof AbortView>;
export const ReassignView = z.object({ run: RunView, from: z.string().nullable(), to: z.string(), approval: z.string().nullable().describe('the pending approval gate that now waits for the new reviewer'), signature: ActSignatureView });
export type ReassignView = z.output<typeof ReassignView>;
