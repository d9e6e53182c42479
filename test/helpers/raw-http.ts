/**
 * HTTP for fuzzing: any method, any bytes, one fresh connection per request (an answer lost on a reused
 * connection would be the client's doing, not the server's), and bodies over a server's limit sent the way
 * curl sends them. Also a raw exchange of bytes, for what no HTTP client will send.
 */
import http from 'node:http';
import net from 'node:net';

export interface RawRequest {
  readonly method: string;
  /** Path and query exactly as they go on the request line. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
}

export interface Answer {
  /** -1: the client would not send it (nothing reached the server); 0: no answer. */
  readonly status: number;
  readonly type: string;
  /** The first 64 KiB of the body. */
  readonly text: string;
  readonly error?: string;
}

const agent = new http.Agent({ keepAlive: false });
const LARGE = 60 * 1024;

/** Send `r` to `base` (http://host:port); resolves with whatever came back, never rejects. */
export function send(base: URL, r: RawRequest): Promise<Answer> {
  if (r.body && r.body.length > LARGE) return sendLarge(base, r);
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Answer): void => {
      if (!settled) (settled = true), resolve(a);
    };
    let req: http.ClientRequest;
    try {
      req = http.request({ host: base.hostname, port: base.port, method: r.method, path: r.path, headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) }, agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < 64 * 1024) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => done({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => done({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text: '', error: e.message }));
      });
    } catch (e) {
      // the client refused to send it (e.g. a character Node does not put in a path): nothing reached the server
      resolve({ status: -1, type: '', text: '', error: `client: ${(e as Error).message}` });
      return;
    }
    // hang guard, not a limit: under load (16 requests at a time on a loaded 2-core box) answers took seconds
    req.setTimeout(120_000, () => req.destroy(new Error('no answer within 120 s')));
    req.on('error', (e) => done({ status: 0, type: '', text: '', error: e.message }));
    req.end(r.body);
  });
}

/**
 * A body over the limit, the way curl sends one: the head first, then — after up to a second without an
 * answer, curl's Expect: 100-continue wait — the body, only while no answer has come. A server refuses such a
 * request from its head (Content-Length, the guard) and closes the connection; a client that keeps writing
 * turns the close into a reset that can swallow the answer (no lingering close): TCP's doing, not the API's.
 */
function sendLarge(base: URL, r: RawRequest): Promise<Answer> {
  return new Promise((resolve) => {
    const sock = net.connect(Number(base.port), base.hostname);
    const head = [`${r.method} ${r.path} HTTP/1.1`, `host: ${base.host}`, 'connection: close', `content-length: ${r.body!.length}`, ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
    const chunks: Buffer[] = [];
    let answered = false;
    let finished = false;
    let bodyStarted = false;
    const finish = (error?: string): void => {
      if (finished) return;
      finished = true;
      sock.destroy();
      resolve(parseAnswer(Buffer.concat(chunks), error));
    };
    sock.on('data', (c: Buffer) => {
      answered = true;
      chunks.push(c);
    });
    sock.on('end', () => finish());
    sock.on('close', () => finish());
    sock.on('error', (e) => {
      // the server refused the request from its head and closed while the body was still going: the reset can
      // discard its answer before it is read (TCP's doing). Inconclusive, not a missing answer: -1, as a request
      // the client could not send.
      if (!answered && bodyStarted && /EPIPE|ECONNRESET/.test((e as NodeJS.ErrnoException).code ?? e.message)) {
        if (!finished) {
          finished = true;
          sock.destroy();
          resolve({ status: -1, type: '', text: '', error: `reset while the body was sent (${e.message}): the answer was lost with the connection` });
        }
        return;
      }
      finish(e.message);
    });
    sock.setTimeout(120_000, () => finish('no answer within 120 s')); // hang guard
    sock.write(head, 'latin1');
    setTimeout(() => {
      // nothing yet: the server wants the body; send it while it has not answered
      const body = r.body!;
      bodyStarted = true;
      let at = 0;
      const pump = (): void => {
        while (!answered && !finished && at < body.length) {
          const ok = sock.write(body.subarray(at, at + 64 * 1024));
          at += 64 * 1024;
          if (!ok) return void sock.once('drain', pump);
        }
      };
      pump();
    }, 1000);
  });
}

/** Bytes in, the bytes of the whole answer out (the server closes the connection). */
export function exchange(base: URL, bytes: string): Promise<{ answer: Answer; raw: string }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(base.port), base.hostname);
    const got: Buffer[] = [];
    sock.on('data', (c: Buffer) => got.push(c));
    sock.on('close', () => {
      const all = Buffer.concat(got);
      resolve({ answer: parseAnswer(all), raw: all.toString('latin1') });
    });
    sock.on('error', reject);
    sock.end(bytes, 'latin1');
  });
}

function parseAnswer(all: Buffer, error?: string): Answer {
  const end = all.indexOf('\r\n\r\n');
  const m = /^HTTP\/1\.1 (\d{3})/.exec(all.subarray(0, Math.max(0, end)).toString('latin1'));
  if (!m) return { status: 0, type: '', text: '', error: error ?? 'no HTTP answer' };
  const type = /\r\ncontent-type: *([^\r]*)/i.exec(all.subarray(0, end).toString('latin1'))?.[1] ?? '';
  return { status: Number(m[1]), type, text: all.subarray(end + 4).toString('utf8') };
}
