/**
 * The one registry of linekeeper error codes.
 *
 * Every error that crosses a module boundary is an {@link LkError} with a stable
 * `LK_*` code. The REST API maps the code to its HTTP status and an
 * `application/problem+json` body; the CLI maps it to an exit code. Tests assert
 * on `code`, never on the message. Add new codes here, never inline.
 */

export interface ErrorDef {
  readonly status: number;
  readonly title: string;
}

export const ERRORS = {
  // configuration
  LK_CONFIG_NOT_FOUND: { status: 500, title: 'Configuration file not found' },
  LK_CONFIG_PARSE: { status: 500, title: 'Configuration file is not valid YAML/JSON' },
  LK_CONFIG_INVALID: { status: 500, title: 'Configuration is invalid' },
  LK_CONFIG_UNREADABLE: { status: 500, title: 'Configuration file exists but cannot be read (a directory, permission denied, too large)' },
  // generic request / input
  LK_VALIDATION: { status: 400, title: 'Request is invalid' },
  LK_NOT_FOUND: { status: 404, title: 'Not found' },
  LK_CONFLICT: { status: 409, title: 'Conflict' },
  LK_INTERNAL: { status: 500, title: 'Internal error' },
  LK_VALUE_INVALID: { status: 422, title: 'Value is not a finite number of the expected type' },
  LK_UNIT_INCOMPATIBLE: { status: 422, title: 'Unit is incompatible with the setpoint' },
  // connectors
  LK_CONN_UNAVAILABLE: { status: 503, title: 'Equipment connection is not available' },
  LK_CONN_TIMEOUT: { status: 504, title: 'Equipment did not answer in time' },
  LK_TAG_UNKNOWN: { status: 404, title: 'Tag is not configured' },
  LK_TAG_NOT_WRITABLE: { status: 403, title: 'Tag is not writable' },
  LK_TAG_UNIT_MISMATCH: { status: 500, title: 'Engineering unit on the server differs from the configuration' },
  LK_WRITE_FAILED: { status: 502, title: 'Equipment refused the write' },
  LK_READBACK_MISMATCH: { status: 502, title: 'Read-back after write does not match the written value' },
  LK_WRITER_CLAIMED: { status: 500, title: 'Write capability already claimed' },
  LK_CERT_UNTRUSTED: { status: 502, title: 'Server certificate is not trusted' },
  LK_PLC_LOST: { status: 409, title: 'Equipment has reverted to its LKG recipe (supervisor LOST) and refuses setpoint writes until re-armed' },
  LK_PLC_OUT_OF_RANGE: { status: 422, title: 'Value is outside the instrument range (EURange) of the tag' },
  LK_PLC_NO_HEARTBEAT: { status: 409, title: 'Equipment cannot be re-armed: no supervisor heartbeat is arriving' },
  LK_MODBUS_ILLEGAL_FUNCTION: { status: 502, title: 'Modbus exception 1: illegal function' },
  LK_MODBUS_ILLEGAL_ADDRESS: { status: 502, title: 'Modbus exception 2: illegal data address' },
  LK_MODBUS_ILLEGAL_VALUE: { status: 502, title: 'Modbus exception 3: illegal data value' },
  LK_MODBUS_DEVICE_FAILURE: { status: 502, title: 'Modbus exception 4: server device failure' },
  LK_MODBUS_BUSY: { status: 503, title: 'Modbus exception 6: server device busy' },
  LK_MODBUS_GATEWAY: { status: 502, title: 'Modbus exception 10/11: gateway path or target failed' },
  LK_MODBUS_EXCEPTION: { status: 502, title: 'Modbus exception' },
  LK_MODBUS_PROTOCOL: { status: 502, title: 'Modbus reply is malformed or does not match the request' },
  LK_CODEC: { status: 500, title: 'Value cannot be encoded for the register' },
  // store and audit
  LK_STORE_CORRUPT: { status: 500, title: 'Database file is corrupt or not a linekeeper database' },
  LK_STORE_MIGRATION: { status: 500, title: 'Database schema migration failed' },
  LK_AUDIT_IMMUTABLE: { status: 409, title: 'Audit entries cannot be changed or removed' },
  LK_AUDIT_BROKEN: { status: 500, title: 'Audit chain verification failed' },
  LK_AUDIT_CHECKPOINT_MISSING: { status: 500, title: 'Audit checkpoint log is missing' },
  LK_AUDIT_KEY: { status: 500, title: 'Site signing key is missing, unreadable or does not match' },
  LK_STORE_FULL: { status: 503, title: 'The data directory\'s disk is full: linekeeper cannot audit, so it does not supervise' },
  LK_DATA_LOCKED: { status: 409, title: 'Another linekeeper process holds the data directory' },
  LK_DATA_NOT_WRITABLE: { status: 500, title: 'The data directory is not writable' },
  LK_DATA_INSECURE: { status: 500, title: 'The data directory is writable by others' },
  // policy and writes
  LK_POLICY_BUNDLE: { status: 500, title: 'Policy bundle is missing or invalid' },
  LK_POLICY_CHANGE_CONTROL: { status: 409, title: 'Policy change needs a change reference and an approver' },
  LK_POLICY_CHANGE_REF_REUSED: { status: 409, title: 'The change reference already belongs to another policy bundle version' },
  LK_POLICY_UNSIGNED: { status: 409, title: 'The policy bundle is not signed: it takes effect only through `linekeeper policy apply`' },
  LK_POLICY_SIGNATURE_INVALID: { status: 409, title: 'The policy bundle\'s signature does not verify for this content, key, site or bundle in force' },
  LK_POLICY_SIGNER: { status: 403, title: 'The policy bundle\'s signer is unknown, inactive or of a role that may not approve a policy change' },
  LK_POLICY_DENIED: { status: 403, title: 'Write denied by policy' },
  LK_NEEDS_QA: { status: 409, title: 'Waits for a named QA reviewer' },
  LK_AUTONOMY_CHANGE: { status: 403, title: 'Autonomy change is not permitted' },
  LK_APPROVAL_STALE: { status: 409, title: 'Approval does not match the pending setpoint vector' },
  LK_MOVE_WITHDRAWN: { status: 409, title: 'The setpoint move was withdrawn (superseded, or its step or run ended) and can no longer be signed' },
  // runs
  LK_LINE_BUSY: { status: 409, title: 'Another run is active on this line' },
  LK_LINE_NOT_READY: { status: 409, title: 'The line is not ready for a run (detail.reasons lists why)' },
  LK_BATCH_CLOSED: { status: 409, title: 'The batch was run already and its run ended (released, rejected, aborted or failed); a re-run is a new batch id from the MES' },
  LK_RUN_STATE: { status: 409, title: 'The run or step cannot make this transition' },
  LK_APPROVAL_FORBIDDEN: { status: 403, title: 'This person may not sign this approval' },
  LK_APPROVAL_DECIDED: { status: 409, title: 'The approval was decided already' },
  LK_EXCEPTION_CLOSED: { status: 409, title: 'The exception was closed already' },
  LK_EXCEPTIONS_OPEN: { status: 409, title: 'Critical or major exceptions of the run are open: the batch cannot be released' },
  LK_MONITOR_ONLY: { status: 409, title: 'The equipment is monitor-only: linekeeper reads it and writes nothing to it' },
  LK_SPEC_FAILED: { status: 409, title: 'The batch failed a specification: it cannot be released, only rejected' },
  LK_SPEC_CHANGED: { status: 409, title: 'The specification table changed since the approval was requested (new results): review it again before signing' },
  LK_REVIEWER_INVALID: { status: 422, title: 'The person named as reviewer is not an active user holding a QA role for the tenant' },
  LK_MEANING_NOT_ALLOWED: { status: 422, title: 'The meaning is not one of the site\'s signature meanings for this act (GET /signature-meanings lists them): nothing was signed' },
  // models
  LK_MODEL_MISSING: { status: 503, title: 'Model is missing' },
  LK_MODEL_CORRUPT: { status: 503, title: 'Model artefact does not match its hash' },
  LK_MODEL_NOT_VALIDATED: { status: 503, title: 'Model is not validated' },
  LK_MODEL_NOT_PINNED: { status: 503, title: 'Model is not pinned to this site' },
  LK_MODEL_TENANT: { status: 404, title: 'Model belongs to another tenant' },
  LK_MODEL_OUT_OF_RANGE: { status: 422, title: 'Input is outside the model’s valid range' },
  LK_MODEL_GATE_FAILED: { status: 422, title: 'Model failed its golden-dataset evaluation; promotion refused' },
  LK_MODEL_TRANSITION: { status: 409, title: 'The model lifecycle does not allow this status change' },
  LK_MODEL_CHANGE: { status: 403, title: 'Model status change is not permitted (person, role or change reference)' },
  // MES and LIMS documents
  LK_BATCH_RECORD_INVALID: { status: 422, title: 'Batch record is invalid' },
  LK_QC_RESULT_INVALID: { status: 422, title: 'QC result is invalid' },
  // runs
  LK_RUN_REQUEST_INVALID: { status: 422, title: 'Run request cannot be read' },
  LK_RUN_REQUEST_LOOSENS: { status: 422, title: 'Run request would loosen a limit of the site or batch record' },
  // REST API, identity and signatures
  LK_UNAUTHENTICATED: { status: 401, title: 'Authentication is required, or the credentials are not valid' },
  LK_REAUTH_FAILED: { status: 401, title: 'Re-authentication at signing failed; nothing was signed' },
  LK_FORBIDDEN: { status: 403, title: 'Your role does not permit this action' },
  LK_ACCOUNT_LOCKED: { status: 423, title: 'The account is locked after repeated failed sign-ins; an administrator unlocks it' },
  LK_ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  LK_PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body is too large' },
  LK_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Request body must be application/json' },
  LK_TOO_MANY_STREAMS: { status: 429, title: 'Too many concurrent event streams for this user' },
  LK_NOT_READY: { status: 503, title: 'linekeeper is not ready' },
  LK_API_LISTEN: { status: 500, title: 'The REST API cannot listen on its configured address' },
  // clients of the daemon (CLI, SDKs): no answer, or one that is not the API's
  LK_API_UNREACHABLE: { status: 503, title: 'The linekeeper API cannot be reached, or the connection failed' },
  LK_API_RESPONSE: { status: 502, title: 'The linekeeper API answered with something that is not one of its documented responses' },
  LK_HEADERS_TOO_LARGE: { status: 431, title: 'The request line or headers are too large' },
  LK_REQUEST_TIMEOUT: { status: 408, title: 'The request did not arrive in time' },
  // files and folders named on the command line or in the configuration
  LK_FILE_NOT_FOUND: { status: 404, title: 'Input file does not exist' },
  LK_FILE_NOT_A_FILE: { status: 422, title: 'Input path is a directory or not a regular file' },
  LK_FILE_UNREADABLE: { status: 500, title: 'Input file cannot be read' },
  LK_FILE_TOO_LARGE: { status: 413, title: 'Input file is larger than linekeeper reads' },
  LK_TAG_TABLE_INVALID: { status: 422, title: 'A row of the register table is invalid (the message names the line and the column); nothing was imported' },
  LK_OUTPUT_INVALID: { status: 422, title: 'Output file cannot be created there (missing folder, a directory, permission denied)' },
  LK_DATA_DIR_NOT_A_DIRECTORY: { status: 500, title: 'Data directory path exists but is not a directory' },
  LK_AUDIT_CHECKPOINT_LOG: { status: 500, title: 'Audit checkpoint log cannot be read or written (not a regular file, unreadable or too large)' },
  // archiving and retention (EU GMP Annex 11 §17, 21 CFR 11.10(c))
  LK_RETENTION_ACTIVE: { status: 409, title: 'The records are inside the site\'s retention period: nothing was dropped' },
  LK_NOT_ARCHIVED: { status: 409, title: 'The records have not been archived as they are now: nothing was dropped' },
  // signed validation reports (IQ, OQ, configuration specification)
  LK_REPORT_INVALID: { status: 422, title: 'The file is not a signed linekeeper report that verifies with this site\'s key (changed after signing, signed by another key, or not a report)' },
  // sign-in throttling, SSO and signatures at a change of autonomy
  LK_RATE_LIMITED: { status: 429, title: 'Too many failed sign-ins from this address or for this account; retry after the time given' },
  LK_SSO_UNMAPPED: { status: 403, title: 'The identity provider\'s token maps to no linekeeper role or tenant of this site' },
  LK_SSO_UNAVAILABLE: { status: 503, title: 'The identity provider\'s signing keys (JWKS) cannot be read' },
  LK_REAUTH_REQUIRED: { status: 428, title: 'This change is signed: re-authenticate (password, or a fresh identity-provider sign-in)' },
  // password policy, separation of duties, token types (21 CFR 11.200, 11.300)
  LK_PASSWORD_CHANGE_REQUIRED: { status: 403, title: 'Your password was set by someone else or has expired: change it (POST /v1/auth/password) before anything else' },
  LK_PASSWORD_WEAK: { status: 422, title: 'The new password is too weak for the site\'s password policy' },
  LK_PASSWORD_REUSED: { status: 422, title: 'The new password is one of the account\'s recent passwords' },
  LK_SOD_CONFLICT: { status: 409, title: 'Separation of duties: an administrator does not hold a signing role, and does not sign' },
  LK_SSO_TOKEN_TYPE: { status: 401, title: 'The identity provider\'s token is not of a type accepted here (an RFC 9068 access token, typ at+jwt)' },
} as const satisfies Record<string, ErrorDef>;

export type ErrorCode = keyof typeof ERRORS;

/** An error with a stable `LK_*` code and optional structured detail. */
export class LkError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ErrorCode, message?: string, detail?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message ?? ERRORS[code].title, options);
    this.name = 'LkError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.detail = detail;
  }

  /** Cross-realm-safe check (worker threads, duplicated module copies). */
  static is(err: unknown, code?: ErrorCode): err is LkError {
    if (typeof err !== 'object' || err === null) return false;
    const c = (err as { code?: unknown }).code;
    if (typeof c !== 'string' || !(c in ERRORS)) return false;
    return code === undefined || c === code;
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...(this.detail ? { detail: this.detail } : {}) };
  }
}

/** Short form for `new LkError(...)`. */
export function lkError(code: ErrorCode, message?: string, detail?: Record<string, unknown>, cause?: unknown): LkError {
  return new LkError(code, message, detail, cause === undefined ? undefined : { cause });
}
