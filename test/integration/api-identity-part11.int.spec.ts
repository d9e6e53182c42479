/**
 * Identity a validation lead accepts (21 CFR 11.200, 11.300; issue 20 §3), through the REST API on a real store:
 * a password someone else set (an administrator's, the demo's one-time ones) opens a session that may change it
 * and nothing else, and signs nothing — so an administrator who set a QA reviewer's password cannot sign as that
 * reviewer; the password policy (strength, history, age); separation of duties; the lock-out per account and
 * source that a stranger cannot put on a named reviewer; who may sign is checked before any password, and a
 * source that waits is answered as a wrong password after the same work. Injected clock; counts, never durations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ensureDemoUsers, Identity } from '../../src/api/identity.js';
import { passwordHashStats } from '../../src/api/passwords.js';
import { Metrics } from '../../src/ops/metrics.js';
import { rejectionCode } from '../helpers/codes.js';
import { PASSWORD, req, siteActions, startIdentityApi, type IdentityApi } from '../helpers/identity-api.js';

const T = '/v1/tenants/acme-pharma';
const STRANGER = '10.66.0.1';
const DESK = '10.0.0.9';
let a: IdentityApi | undefined;
afterEach(async () => {
  await a?.close();
  a = undefined;
});

const signIn = async (x: IdentityApi, user: string, password = PASSWORD, ip?: string) => req(x, 'POST', '/v1/auth/token', { body: { user, password }, ...(ip ? { ip } : {}) });

/** Lower agent.compress_fill to L0 as the operator, so that a raise to L1 is a signature a QA reviewer may give. */
async function lowered(x: IdentityApi): Promise<void> {
  const op = (await signIn(x, 'o.operator')).body.token as string;
  const r = await req(x, 'PUT', `${T}/autonomy`, { token: op, body: { agent: 'agent.compress_fill', level: 'L0', reason: 'drift seen on the press' } });
  expect(r.status).toBe(200);
}

const raise = (x: IdentityApi, token: string, password: string, ip?: string) =>
  req(x, 'PUT', `${T}/autonomy`, { token, body: { agent: 'agent.compress_fill', level: 'L1', changeRef: 'CC-2026-0420', reason: 'drift explained', password }, ...(ip ? { ip } : {}) });

describe('a password someone else set must be changed first, and signs nothing before', () => {
  it('[P11.300] an administrator who resets a QA reviewer\'s password can sign in with it but cannot sign as the reviewer; the reviewer\'s own change opens the session', async () => {
    a = await startIdentityApi();
    await lowered(a);
    const own = (await signIn(a, 'm.rossi')).body.token as string;
    const known = 'the administrator knows this one, 42';
    await a.identity.setPassword('m.rossi', known, 'd.marino', 'forgotten password');
    expect((await req(a, 'GET', `${T}/autonomy`, { token: own })).status).toBe(401); // the reviewer's sessions ended

    const posing = await signIn(a, 'm.rossi', known);
    expect(posing.status).toBe(200);
    expect(posing.body.mustChangePassword).toBe(true);
    const tok = posing.body.token as string;
    const read = await req(a, 'GET', `${T}/autonomy`, { token: tok });
    expect([read.status, read.body.code]).toEqual([403, 'LK_PASSWORD_CHANGE_REQUIRED']);
    const sign = await raise(a, tok, known);
    expect([sign.status, sign.body.code]).toEqual([403, 'LK_PASSWORD_CHANGE_REQUIRED']);
    // every other way to sign re-authenticates through the identity, which refuses as well (before any hash)
    expect(await rejectionCode(a.identity.reauthenticate('m.rossi', known))).toBe('LK_PASSWORD_CHANGE_REQUIRED');
    expect((await req(a, 'GET', '/v1/auth/me', { token: tok })).body).toMatchObject({ user: { id: 'm.rossi' }, mustChangePassword: true });
    expect(siteActions(a.store).find((e) => e.action === 'user.password' && e.args['user'] === 'm.rossi' && e.actor === 'd.marino')).toMatchObject({ actor: 'd.marino', args: { user: 'm.rossi', self: false, mustChangePassword: true } });

    const mine = 'maria chose this herself at 06:40';
    const changed = await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: known, password: mine } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ user: { id: 'm.rossi' }, mustChangePassword: false });
    expect((await req(a, 'GET', `${T}/autonomy`, { token: tok })).status).toBe(200);
    expect((await raise(a, tok, known)).body.code).toBe('LK_REAUTH_FAILED');
    expect((await raise(a, tok, mine)).body).toMatchObject({ type: 'autonomy_raised', by: 'm.rossi', signed: true });
  });

  it('[P11.300] a new user\'s first session: who-am-I and the change only; a wrong current password, a weak or the same password are refused with their codes', async () => {
    a = await startIdentityApi();
    const initial = 'welcome to the plant, Quinta';
    await a.identity.create({ id: 'q.nuovo', name: 'Quinta Nuovo', role: 'qa_reviewer', tenants: ['acme-pharma'], password: initial }, 'd.marino', 'new QA reviewer');
    const first = await signIn(a, 'q.nuovo', initial);
    expect(first.body.mustChangePassword).toBe(true);
    const tok = first.body.token as string;
    expect((await req(a, 'GET', `${T}/runs`, { token: tok })).body.code).toBe('LK_PASSWORD_CHANGE_REQUIRED');
    const wrong = await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: 'not the password', password: 'quinta picks a long one 77' } });
    expect([wrong.status, wrong.body.code]).toEqual([401, 'LK_REAUTH_FAILED']);
    const weak = await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: initial, password: 'aaaaaaaaaaaa' } });
    expect([weak.status, weak.body.code]).toEqual([422, 'LK_PASSWORD_WEAK']);
    expect(weak.body.detail).toMatch(/Repeated characters/);
    const same = await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: initial, password: initial } });
    expect([same.status, same.body.code]).toEqual([422, 'LK_PASSWORD_REUSED']);
    expect((await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: initial, password: 'quinta picks a long one 77' } })).status).toBe(200);
    expect((await req(a, 'GET', `${T}/runs`, { token: tok })).status).not.toBe(403);
    // an administrator creating a user with a weak password is refused the same way
    expect(await rejectionCode(a.identity.create({ id: 'w.eak', name: 'Wes Eak', role: 'operator', tenants: ['acme-pharma'], password: 'aaaaaaaaaaaa' }, 'd.marino', 'x'))).toBe('LK_PASSWORD_WEAK');
  });

  it('[P11.300] history: none of the recent passwords comes back; ageing: past the maximum age the session may only change it', async () => {
    a = await startIdentityApi();
    const tok = (await signIn(a, 'm.rossi')).body.token as string;
    const second = 'second of maria\'s passwords 2026';
    expect((await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: PASSWORD, password: second } })).status).toBe(200);
    const back = await req(a, 'POST', '/v1/auth/password', { token: tok, body: { current: second, password: PASSWORD } });
    expect([back.status, back.body.code]).toEqual([422, 'LK_PASSWORD_REUSED']);
    a.clock.advance(180 * 86_400_000);
    const aged = await signIn(a, 'm.rossi', second);
    expect(aged.body.mustChangePassword).toBe(true);
    expect((await req(a, 'GET', `${T}/autonomy`, { token: aged.body.token })).body.code).toBe('LK_PASSWORD_CHANGE_REQUIRED');
    expect((await req(a, 'POST', '/v1/auth/password', { token: aged.body.token, body: { current: second, password: 'third of maria\'s passwords 2026' } })).body.mustChangePassword).toBe(false);
    expect((await req(a, 'GET', `${T}/autonomy`, { token: aged.body.token })).status).toBe(200);
  });

  it('[P11.100] the demo identities\' one-time passwords must be changed, and no demo administrator shares a person with a signer', async () => {
    a = await startIdentityApi();
    const other = new Identity({ store: a.store, clock: a.clock, scryptLog2N: 4 });
    const demo = await ensureDemoUsers(other, ['acme-pharma', 'borealis-bio']);
    expect(demo.map((u) => u.id).sort()).toEqual(['a.ricci', 'g.ferri', 'l.conti']); // the others exist in this store
    for (const u of demo) expect((await signIn(a, u.id, u.password)).body.mustChangePassword).toBe(true);
  });
});

describe('separation of duties', () => {
  it('[P11.100] one person holds no administrator\'s account beside a signing one; a site may add roles to the set, never remove; an administrator never signs', async () => {
    a = await startIdentityApi();
    const pw = 'a long password for this test 9';
    expect(await rejectionCode(a.identity.create({ id: 'm.rossi2', name: 'maria  ROSSI', role: 'admin', tenants: ['acme-pharma'], password: pw }, 'd.marino', 'x'))).toBe('LK_SOD_CONFLICT');
    expect(await rejectionCode(a.identity.create({ id: 'd.marino2', name: 'Davide Marino', role: 'qa_reviewer', tenants: ['acme-pharma'], password: pw }, 'd.marino', 'x'))).toBe('LK_SOD_CONFLICT');
    // an auditor may also administer by default; a site that adds auditor to the set refuses it
    await a.identity.create({ id: 'a.verdi', name: 'Anna Verdi', role: 'auditor', tenants: ['acme-pharma'], password: pw }, 'd.marino', 'x');
    const stricter = new Identity({ store: a.store, clock: a.clock, scryptLog2N: 4, incompatibleWithAdmin: ['auditor'] });
    expect(await rejectionCode(stricter.create({ id: 'a.verdi2', name: 'Anna Verdi', role: 'admin', tenants: ['acme-pharma'], password: pw }, 'd.marino', 'x'))).toBe('LK_SOD_CONFLICT');
    expect(stricter.incompatible.has('qa_reviewer')).toBe(true); // the signing roles stay in the set whatever is added
    expect(await rejectionCode(a.identity.create({ id: 'a.verdi3', name: 'Anna Verdi', role: 'admin', tenants: ['acme-pharma'], password: pw }, 'd.marino', 'x'))).toBeUndefined();
    // even with the right password (and a bundle that listed admin among approvers), an administrator signs nothing
    const admin = a.identity.users.get('d.marino')!;
    const before = passwordHashStats().started;
    expect(await rejectionCode(a.identity.reauthenticateSigner({ id: admin.id, name: admin.name, role: 'admin', tenants: admin.tenants, source: 'local' }, PASSWORD))).toBe('LK_SOD_CONFLICT');
    expect(passwordHashStats().started).toBe(before);
  });
});

describe('lock-out per account and source (the stranger of issue 20)', () => {
  it('[P11.300] a stranger guessing from one source makes that source wait, doubling; the reviewer at another source signs in and signs; audited, counted, and an administrator clears it', async () => {
    a = await startIdentityApi();
    const metrics = new Metrics();
    metrics.observeAudit(a.store);
    await lowered(a);
    const codes: unknown[] = [];
    for (let i = 0; i < 4; i++) codes.push((await signIn(a, 'm.rossi', `guess ${i} of the stranger`, STRANGER)).body.code);
    expect(codes).toEqual(['LK_UNAUTHENTICATED', 'LK_UNAUTHENTICATED', 'LK_UNAUTHENTICATED', 'LK_RATE_LIMITED']);
    a.clock.advance(60_000); // one window
    for (let i = 0; i < 2; i++) expect((await signIn(a, 'm.rossi', `guess ${i + 4} of the stranger`, STRANGER)).body.code).toBe('LK_UNAUTHENTICATED');
    const locked = siteActions(a.store).filter((e) => e.action === 'auth.locked');
    expect(locked.map((e) => e.args)).toEqual([{ user: 'm.rossi', source: STRANGER, failures: 5, until: new Date(a.clock.now() + 60_000).toISOString() }]);

    // the reviewer, elsewhere: signs in and signs as if nothing happened
    const rossi = await signIn(a, 'm.rossi', PASSWORD, DESK);
    expect(rossi.status).toBe(200);
    expect((await raise(a, rossi.body.token, PASSWORD, DESK)).body).toMatchObject({ type: 'autonomy_raised', by: 'm.rossi', signed: true });

    // the stranger's source, even with the right password, is answered as a wrong one — after the same work
    expect((await signIn(a, 'n.obody', 'whatever it is', '10.1.1.1')).status).toBe(401); // (the stand-in hash exists from now on)
    const hashes = passwordHashStats().started;
    const held = await signIn(a, 'm.rossi', PASSWORD, STRANGER);
    expect([held.status, held.body.code]).toEqual([401, 'LK_UNAUTHENTICATED']);
    expect(passwordHashStats().started).toBe(hashes + 1);
    // progressive: after the wait, one more failure waits twice as long
    a.clock.advance(60_000);
    expect((await signIn(a, 'm.rossi', 'guess 6 of the stranger', STRANGER)).status).toBe(401);
    expect(siteActions(a.store).filter((e) => e.action === 'auth.locked').at(-1)!.args['until']).toBe(new Date(a.clock.now() + 120_000).toISOString());
    expect(await metrics.registry.getSingleMetricAsString('linekeeper_auth_lockouts_total')).toMatch(/linekeeper_auth_lockouts_total\{event="locked"\} 2/);

    expect(a.identity.unlock('m.rossi', 'd.marino', 'stranger identified; source blocked at the firewall')).toBe(true);
    expect(siteActions(a.store).find((e) => e.action === 'user.unlock')).toMatchObject({ actor: 'd.marino', args: { user: 'm.rossi', sources: [{ source: STRANGER, failures: 6 }] } });
    a.clock.advance(60_000); // the address throttle's window
    expect((await signIn(a, 'm.rossi', PASSWORD, STRANGER)).status).toBe(200);
  });

  it('[P11.200] at signing: who may sign is checked before the password (a wrong one from someone who may not sign counts nowhere); a signer\'s source that waits is answered as a wrong password', async () => {
    a = await startIdentityApi();
    await lowered(a);
    const op = (await signIn(a, 'o.operator', PASSWORD, DESK)).body.token as string;
    for (let i = 0; i < 7; i++) expect((await raise(a, op, `not the operator's password ${i}`, DESK)).body.code).toBe('LK_AUTONOMY_CHANGE');
    expect(siteActions(a.store).filter((e) => e.action === 'auth.failed')).toHaveLength(0);
    expect(a.identity.lockouts.of('o.operator')).toEqual([]);

    const qa = (await signIn(a, 'm.rossi', PASSWORD, DESK)).body.token as string;
    const answers: unknown[] = [];
    for (let i = 0; i < 5; i++) answers.push(((r) => [r.status, r.body.code])(await raise(a, qa, `a typo ${i}`, DESK)));
    expect(siteActions(a.store).filter((e) => e.action === 'auth.locked').map((e) => e.args['source'])).toEqual([DESK]);
    expect((await signIn(a, 'n.obody', 'whatever it is', '10.1.1.1')).status).toBe(401); // (the stand-in hash exists from now on)
    const hashes = passwordHashStats().started;
    const right = await raise(a, qa, PASSWORD, DESK);
    expect([right.status, right.body.code]).toEqual(answers[0]);
    expect(answers[0]).toEqual([401, 'LK_REAUTH_FAILED']);
    expect(passwordHashStats().started).toBe(hashes + 1);
  });
});
