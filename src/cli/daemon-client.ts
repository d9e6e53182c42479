/**
 * The CLI talks to the daemon through the SDK's typed client (src/sdk/client.ts), so the command line, the SDK
 * and their event-stream reader speak one wire contract. What is the CLI's own is only its words: a transport
 * (Node's fetch) that names the CLI in `user-agent` and says where the daemon was not found, and the mapping of
 * the SDK's {@link LinekeeperError} to the CLI's LkError of the same code, with the hints the CLI prints under
 * the error line and the exit code of that code (src/cli/main.ts).
 */
import { ERRORS, LkError, type ErrorCode } from '../errors.js';
import { LinekeeperClient, type FetchLike } from '../sdk/client.js';
import { LinekeeperError, sdkError } from '../sdk/errors.js';
import { VERSION } from '../version.js';

const UNREACHABLE_HINT = 'is `linekeeper serve` running there? (--url or LINEKEEPER_URL name another address)';

/**
 * Node's fetch, naming the CLI; a request that gets no answer is LK_API_UNREACHABLE saying where the daemon was
 * looked for and why (`ECONNREFUSED`). A request closed by its caller stays an abort.
 */
function transport(url: string): FetchLike {
  return async (u, init) => {
    try {
      return await fetch(u, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), 'user-agent': `linekeeper-cli/${VERSION}` } });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw sdkError('LK_API_UNREACHABLE', `cannot reach the linekeeper daemon at ${url} (${why})`, { cause: err });
    }
  };
}

/**
 * A client of the daemon at `url`: with the session's token and tenant, or with a user and password to sign in
 * (`linekeeper login`). The token is the session's; the CLI renews it itself (session.ts: the renewed one is
 * stored), so no expiry is given to the client.
 */
export function daemonClient(o: { url: string; tenant?: string } & ({ token: string } | { user: string; password: string })): LinekeeperClient {
  const common = { url: o.url, fetch: transport(o.url), ...(o.tenant !== undefined ? { tenant: o.tenant } : {}) };
  return 'token' in o ? new LinekeeperClient({ ...common, token: o.token }) : new LinekeeperClient({ ...common, user: o.user, password: o.password });
}

/**
 * The CLI's error for what the SDK failed with: an LkError of the daemon's code when the CLI knows it (with the
 * hint it prints, the problem's `issues` and `reasons`); the LinekeeperError itself for a code this CLI does not
 * know (a newer daemon: printed `linekeeper: <detail> [<code>]`, exit code 1); for an answer that was not a
 * problem body (a proxy's page, a crash) what the status says, LK_INTERNAL or LK_UNAUTHENTICATED. Anything else
 * passes as it is.
 */
export function cliError(err: unknown): unknown {
  if (!LinekeeperError.is(err)) return err;
  const { code, status } = err;
  const notProblem = code === 'LK_API_RESPONSE' && err.detail.startsWith(`HTTP ${status} without a problem body`);
  if (notProblem || !/^LK_[A-Z0-9_]+$/.test(code)) {
    return new LkError(status === 401 ? 'LK_UNAUTHENTICATED' : 'LK_INTERNAL', notProblem ? `${err.request ?? 'the daemon'}: HTTP ${status}` : err.detail, { status }, { cause: err });
  }
  if (!(code in ERRORS)) return err;
  const hint = code === 'LK_UNAUTHENTICATED' ? { hint: 'sign in again: linekeeper login' }
    : code === 'LK_LINE_NOT_READY' ? { hint: 'linekeeper line readiness lists each reason; a process engineer re-arms a LOST PLC: linekeeper line rearm <unit> --reason "…"' }
      : code === 'LK_API_UNREACHABLE' ? { hint: UNREACHABLE_HINT }
        : code === 'LK_MEANING_NOT_ALLOWED' ? { hint: `nothing was signed: pass one of ${err.meanings.length ? err.meanings.map((m) => m.id).join(', ') : 'the site\'s meanings'} with --meaning (its id, or its text as listed); your own words go beside it (--comment, --reason)` }
          : {};
  return new LkError(code as ErrorCode, err.detail, {
    status, ...hint, ...(err.issues.length > 0 ? { issues: err.issues } : {}), ...(err.reasons.length > 0 ? { reasons: err.reasons } : {}),
  }, { cause: err });
}
