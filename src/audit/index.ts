/**
 * The audit trail's public surface. Most callers need only `store.audit`
 * (from `openStore`) and `store.tx`; these are the rest: verify, query,
 * exports, site events, and the types.
 */
export { AuditTrail, startCheckpointTimer, type AuditOptions, type ChainHead, type IntentRef } from './trail.js';
export {
  GENESIS_HASH, KNOWN_KINDS, SITE_TENANT, SUBJECT_KEYS, canonicalJson, entryHash,
  type AuditEntry, type AuditEntryInput, type AuditSignature, type AuditSubject, type HashedEntry, type Json,
} from './entry.js';
export { verifyStore, type ChainReport, type Damage, type DamageKind, type VerifyOptions, type VerifyReport } from './verify.js';
export { AuditFilter, MAX_PAGE, filterBounds, iterateAudit, parseFilter, queryAudit, querySitePeople, type AuditPage, type ValidFilter } from './query.js';
export { EVERY_ENTRY } from './select.js';
export { BUNDLE_FORMAT, bundleLines, exportBundle, verifyBundle, type BundleHeader, type BundleReport } from './bundle.js';
export { exportCsv, CSV_COLUMNS } from './export-csv.js';
export { exportPdf, type PdfOptions } from './export-pdf.js';
export { checkpointLogFile, type Checkpoint, type SignedCheckpoint } from './checkpoints.js';
export { keyFiles, loadSitePublicKey, parsePublicKey, type PublicSiteKey, type SiteKey } from './keys.js';
export {
  configChanged, configInvalid, connectorEvent, heartbeatEvent, recordSiteEvent, siteStarted, siteStopped, watchdogEvent,
  type ConnectorState, type HeartbeatState, type SiteEvent,
} from './site-events.js';
