/**
 * One tool-call line to many event streams: the line is serialised once and every stream is written the same
 * bytes. Real HTTP (fastify on loopback, clients reading the wire); the engine is reduced to what RunStreams uses,
 * so the line handed to the streams can count how often it is serialised.
 */
import http from 'node:http';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { RunStreams } from '../../src/api/sse.js';
import { silentLogger } from '../../src/log.js';
import type { ToolCallRecord } from '../../src/store/run-store.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('event streams: one line to many streams', () => {
  it('serialises a line once, however many streams are open, and writes every stream the same bytes', async () => {
    const tool = new Set<(row: ToolCallRecord) => void>();
    const engine = {
      get: () => ({ status: 'running' }),
      toolCalls: () => [],
      onToolCall: (l: (row: ToolCallRecord) => void) => (tool.add(l), () => void tool.delete(l)),
      onChange: () => () => undefined,
      settled: async () => undefined,
    };
    const streams = new RunStreams(engine as unknown as ConstructorParameters<typeof RunStreams>[0], silentLogger, { perUser: 10 });
    const app = Fastify({ logger: false });
    app.get('/stream', (_req, reply) => streams.start(reply, 't', 'run-1', 'u', 0));
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => app.close(), () => streams.closeAll('test over'));

    const N = 3;
    const bodies: string[] = Array.from({ length: N }, () => '');
    const agent = new http.Agent({ keepAlive: true, maxSockets: N });
    cleanups.push(() => agent.destroy());
    await Promise.all(bodies.map((_, i) => new Promise<void>((resolve, reject) => {
      http.get(`${url}/stream`, { agent }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (c: string) => (bodies[i] += c));
        resolve();
      }).on('error', reject);
    })));
    while (tool.size < N) await new Promise((r) => setTimeout(r, 10));

    let serialised = 0;
    const args = { setpoint: 'press.MainForce', value: '12.5 kN', toJSON() { serialised++; return { setpoint: this.setpoint, value: this.value }; } };
    const row: ToolCallRecord = { run: 'run-1', id: 1, at: Date.UTC(2026, 0, 1, 6), kind: 'call', step: 'compress', agent: 'press', tool: 'write_setpoint', args, summary: null, result: null, auditSeq: 7 };
    for (const l of tool) l(row);
    while (!bodies.every((b) => b.endsWith('\n\n') && b.includes('"auditSeq":7'))) await new Promise((r) => setTimeout(r, 10));

    expect(serialised).toBe(1); // once for all three streams
    const event = bodies[0]!.slice(bodies[0]!.indexOf('id: 1'));
    expect(event).toBe(`id: 1\nevent: call\ndata: ${JSON.stringify({ id: 1, run: 'run-1', at: row.at, time: JSON.parse(event.split('data: ')[1]!).time, kind: 'call', step: 'compress', agent: 'press', tool: 'write_setpoint', args: { setpoint: 'press.MainForce', value: '12.5 kN' }, auditSeq: 7 })}\n\n`);
    for (const b of bodies) expect(b.slice(b.indexOf('id: 1'))).toBe(event); // the same bytes on every stream
  });
});
