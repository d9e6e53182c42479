/**
 * The event fan-out every connector needs: listeners subscribe with `on`, and
 * a listener that throws is logged and skipped. One broken listener must not
 * keep the others (the audit sink among them) from hearing of a lost link.
 */
import type { Logger } from '../src/log.js';
import type { ConnectorEvent } from './types.js';

export class ConnectorEvents {
  private readonly listeners = new Set<(e: ConnectorEvent) => void>();

  constructor(private readonly log: Pick<Logger, 'error'>) {}

  /** Subscribe; returns the unsubscribe function (see `Connector.on`). */
  on(listener: (e: ConnectorEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Deliver to every listener; never throws. */
  emit(e: ConnectorEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        this.log.error({ err, event: e.type }, 'connector event listener threw');
      }
    }
  }
}
