/**
 * EngineeringUnits of the simulator's AnalogItems: UCUM (our configuration)
 * → UNECE Recommendation 20 EUInformation, from the ONE table the OPC UA
 * connector checks units against (connectors/opcua/units.ts), so the server
 * and the client cannot disagree. A unit without a UNECE code we can vouch
 * for gets unitId −1 and its UCUM code as display name.
 */
import { euInformationFor, ucumOf, type EuFields } from '../opcua/units.js';

export { UNECE_NAMESPACE_URI as UNECE_NAMESPACE, unitIdOf as commonCodeToUnitId, UNIT_TABLE } from '../opcua/units.js';

/** EUInformation fields (a plain object node-opcua accepts) for a UCUM code. */
export function euInformation(ucum: string): EuFields {
  return euInformationFor(ucum);
}

/** The UCUM code of an EUInformation as a client reads it; undefined when unknown. */
export function ucumFromEu(eu: { unitId?: number | null; displayName?: { text?: string | null } | null }): string | undefined {
  return ucumOf({ unitId: eu.unitId ?? null, displayName: eu.displayName?.text ?? null });
}
