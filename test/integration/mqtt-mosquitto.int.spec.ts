/**
 * Store-and-forward against Debian's mosquitto, started by the test on loopback with persistence in a temp dir:
 * the broker process is terminated mid-stream and started again; a host application with a persistent session
 * sees, in order, everything the edge node held in the outage (replayed with the historical flag) and after it, seq
 * continuous per birth. Births and data are QoS 0 (Sparkplug 3.0), so mosquitto queues them for the host's
 * persistent session with `queue_qos0_messages`.
 */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { newStore, tempDir } from '../unit/audit-helpers.js';
import { counterSender, counterValues, firstOccurrences, mosquittoBroker, newPublisher, seqBroken, subscriber, until } from './mqtt-helpers.js';

const MOSQUITTO = '/usr/sbin/mosquitto';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe.skipIf(!existsSync(MOSQUITTO))('Sparkplug B publisher on mosquitto', () => {
  it('mosquitto terminated mid-stream and restarted: order kept, everything held delivered, the outage historical', async () => {
    const t = tempDir('lk-mosq-');
    cleanups.push(t.cleanup);
    const b = await mosquittoBroker(t.dir);
    cleanups.push(() => b.close());
    const { store: s, clock } = newStore(t.dir);
    cleanups.push(() => s.close());
    const sub = await subscriber(b.url, 'host-m', 'spBv1.0/plant/#');
    cleanups.push(() => sub.client.endAsync(true));
    const p = newPublisher(s, clock, b.url);
    cleanups.push(() => p.stop());
    p.start();
    await p.when('live');
    const send = counterSender(p, clock);
    send(300);
    await until(() => counterValues(sub.seen).length >= 20, 'the first values through');
    await b.kill();
    await p.when('offline');
    send(300);
    await p.flushed(); // queued = committed (the turn's group)
    expect(p.stats().queued).toBeGreaterThanOrEqual(300);
    await b.restart();
    await p.when('live');
    send(200);
    await until(() => counterValues(sub.seen).some((x) => x.value === 800), 'the last live value', 60_000);

    // QoS 0 births and data: what the broker had not yet handed on when it was terminated is gone; what the edge
    // node held (its outbox) and everything after arrives, in order
    const values = counterValues(sub.seen);
    const firsts = firstOccurrences(values);
    expect(firsts).toEqual([...firsts].sort((a, x) => a - x));
    expect(firsts.filter((v) => v > 300)).toEqual(Array.from({ length: 500 }, (_, i) => i + 301));
    expect(sub.errors).toEqual([]);
    for (const x of values.filter((y) => y.value > 300 && y.value <= 600)) expect(x.historical).toBe(true);
    const births = sub.seen.filter((x) => x.topic === 'spBv1.0/plant/NBIRTH/line-3');
    expect(births.length).toBeGreaterThanOrEqual(2);
    expect(seqBroken(sub.seen)).toBeUndefined();
  });
});
