/**
 * The JSON Schemas of the documents linekeeper reads (`linekeeper config schema --of <kind>`), generated from the zod
 * schemas that validate them. A module of their own: the schemas of the recorded batches and the NIR calibration
 * bring the model fitting's modules, which `config check` (systemd's ExecStartPre, at every start) has no use for.
 */
import { z } from 'zod';
import { SiteConfig } from '../config/schema.js';
import { BatchRecord } from '../domain/batch-record.js';
import { QcResult } from '../domain/qc-result.js';
import { RecordedBatches } from '../models/site-fit.js';
import { NirCalibration } from '../models/site-nir.js';
import type { SchemaKind } from './commands/config.js';

/** JSON Schema (draft 2020-12) of the site configuration, as editors consume it. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(SiteConfig, { io: 'input' }),
    $id: 'https://linekeeper.invalid/schema/site-config-v1.json',
    title: 'linekeeper site configuration',
  };
}

/**
 * The documents linekeeper reads from other systems, as JSON Schemas an integration is written against: the
 * site configuration, a batch record from the MES inbox, a QC result from the LIMS folder. Generated from the
 * same zod schemas that validate them; and the recorded batches and NIR calibration spectra a site fits its twin and its NIR model on (`models fit`) (cross-field rules, such as a reviewer who is not the QA reviewer, are
 * checked on intake and not expressible here). Shipped as config/<kind>.schema.json.
 */
export function jsonSchemaOf(kind: SchemaKind): Record<string, unknown> {
  if (kind === 'site') return configJsonSchema();
  const [schema, title] =
    kind === 'batch-record' ? [BatchRecord, 'linekeeper batch record (MES inbox)']
    : kind === 'qc-result' ? [QcResult, 'linekeeper QC result (LIMS results folder)']
    : kind === 'recorded-batches' ? [RecordedBatches, 'linekeeper recorded batches (a site\'s historian/LIMS export for `models fit`)']
    : [NirCalibration, 'linekeeper NIR calibration spectra (a site\'s NIR spectra with LIMS reference values for `models fit`)'];
  return { ...z.toJSONSchema(schema, { io: 'input' }), $id: `https://linekeeper.invalid/schema/${kind}-v1.json`, title };
}
