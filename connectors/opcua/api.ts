/**
 * Public types of the OPC UA connector.
 */
import type { Clock } from '../../src/clock.js';
import type { Logger } from '../../src/log.js';
import type { OpcUaConnectionConfig, OpcUaEquipmentConfig } from '../../src/config/schema.js';
import type { Connector, Sample, SubscribeOptions } from '../types.js';
import type { UnitAlias } from './units.js';

export interface OpcUaConnectorOptions {
  readonly connection: OpcUaConnectionConfig;
  /** The equipment of the site configuration that uses this connection. */
  readonly equipment: readonly OpcUaEquipmentConfig[];
  /** The actual endpoint URL (the caller resolves `sim` to the simulator's URL). */
  readonly url: string;
  /** Data directory: the client PKI lives in `<dataDir>/pki`. */
  readonly dataDir: string;
  /** Stamps Sample.receivedAt and WriteResult.at; watchdog timing uses the monotonic clock. */
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The site's `unit_aliases`: vendor EngineeringUnits labels → UCUM with a factor. */
  readonly unitAliases?: Readonly<Record<string, UnitAlias>>;
  /** Retry delays of the initial connection and of session re-creation (node-opcua's reconnection uses the same bounds). */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number };
}

/** A subscription of this connector; `serverSubscriptionId` is for diagnostics and fault tests. */
export interface OpcUaSubscription {
  readonly tags: readonly string[];
  readonly serverSubscriptionId: number | undefined;
  close(): Promise<void>;
}

export interface OpcUaConnector extends Connector {
  readonly protocol: 'opcua';
  subscribe(tags: readonly string[], options: SubscribeOptions, onSamples: (samples: Sample[]) => void): Promise<OpcUaSubscription>;
}
