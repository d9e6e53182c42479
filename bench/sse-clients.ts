/**
 * Child process of bench/api.bench.ts: `n` server-sent-event clients in their own process (so the server's
 * event loop is not also parsing 200 streams), each recording when every event id arrived on the system-wide
 * monotonic clock (`process.hrtime`, CLOCK_MONOTONIC on Linux: the parent stamps commits on the same clock).
 * IPC messages: ← the options; → `{ ready: true }` once every stream answered 200; ← `{ until: lastId }`;
 * → `{ times }` once every stream has `lastId` (or after 30 s), `times[id]` one arrival time per stream.
 */
import http from 'node:http';

interface Options {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly n: number;
}

const o = await new Promise<Options>((resolve) => process.once('message', (m) => resolve(m as Options)));
const send = (m: unknown, then?: () => void): void => void process.send!(m, undefined, {}, () => then?.());
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const times = new Map<number, number[]>();
const last: number[] = new Array<number>(o.n).fill(0);
const agent = new http.Agent({ keepAlive: true, maxSockets: o.n });
let until = Number.POSITIVE_INFINITY;
let opened = 0;
let finished = false;

function check(): void {
  if (finished || !last.every((l) => l >= until)) return;
  finish();
}

function finish(): void {
  finished = true;
  agent.destroy();
  // disconnecting before the message is flushed would drop it
  send({ times: Object.fromEntries(times) }, () => process.disconnect());
}

for (let i = 0; i < o.n; i++) {
  http.get(o.url, { agent, headers: { accept: 'text/event-stream', ...o.headers } }, (res) => {
    if (res.statusCode !== 200) throw new Error(`stream ${i}: HTTP ${res.statusCode}`);
    if (++opened === o.n) send({ ready: true });
    let buf = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const at = now();
      buf += chunk;
      let k: number;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, k);
        buf = buf.slice(k + 2);
        const m = /^id: (\d+)$/m.exec(block);
        if (!m) continue;
        const id = Number(m[1]);
        let a = times.get(id);
        if (!a) times.set(id, (a = []));
        a.push(at);
        last[i] = id;
      }
      check();
    });
  }).on('error', (e) => {
    if (!finished) throw e;
  });
}

process.on('message', (m: { until: number }) => {
  until = m.until;
  setTimeout(() => !finished && finish(), 30_000).unref();
  check();
});
