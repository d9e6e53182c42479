/**
 * The site's time zone for the command line's tables (`site.timezone`; the formats are src/domain/site-time.ts):
 * the running daemon's, which GET /line tells every signed-in role, or, for a command that reads the data
 * directory, the configuration's. `--json` output stays UTC and needs neither.
 */
import type { LinekeeperClient } from '../sdk/client.js';

/**
 * The daemon's site time zone. UTC when the daemon does not say (an older one) or cannot be asked: the times are
 * then printed as recorded, in UTC — still the right instants, and said to be UTC.
 */
export async function daemonZone(client: Pick<LinekeeperClient, 'line'>): Promise<string> {
  try {
    return (await client.line()).timezone ?? 'UTC';
  } catch {
    return 'UTC';
  }
}
