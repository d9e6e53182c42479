/**
 * Headless Chromium for the console's end-to-end tests: the system's chromium (CI installs it), one context
 * at a viewport (and, when given, in a time zone of its own: `timezoneId`), one page with a 90 s default timeout (a hang guard, not a speed limit: a download took over 30 s
 * in CI while the other worker ran CPU-bound seeds) whose page errors and console errors are collected into
 * `problems` (the errors a test provokes on purpose — refused requests of the statuses `ignore` matches — left
 * out), so a test can assert at its end that nothing else went wrong.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Download, type Page } from 'playwright-core';

/**
 * playwright-core keeps an AsyncLocalStorage, and once it runs Node (20) calls its promise hooks at every promise of
 * the process until the storage is disabled: 200,000 awaits took 10 ms before a launch, 36 ms after it and 33 ms
 * after the browser closed. Test files share their worker's process (vitest.config.ts), so every file after a browser
 * test paid it — 6–15 % of the sampled time of the files that followed the console's test in one run, the core
 * simulator's among them. The storages that first run while a page is being opened are playwright's (nothing else
 * in a test process uses one); {@link closeConsolePage} disables them once the browser is closed (a later launch
 * runs them again).
 */
const LAUNCH_STORAGES = Symbol.for('linekeeper.test.launchStorages');
type Storages = { opening: number; readonly seen: Set<AsyncLocalStorage<unknown>> };
const storages: Storages = ((globalThis as Record<symbol, unknown>)[LAUNCH_STORAGES] as Storages | undefined) ?? (() => {
  const s: Storages = { opening: 0, seen: new Set() };
  (globalThis as Record<symbol, unknown>)[LAUNCH_STORAGES] = s;
  const proto = AsyncLocalStorage.prototype as unknown as Record<'run' | 'enterWith', (...a: unknown[]) => unknown>;
  for (const m of ['run', 'enterWith'] as const) {
    const original = proto[m];
    proto[m] = function (this: AsyncLocalStorage<unknown>, ...a: unknown[]) {
      if (s.opening > 0) s.seen.add(this);
      return original.apply(this, a);
    };
  }
  return s;
})();

export async function openConsolePage(o: { viewport: { width: number; height: number }; ignore: RegExp; problems: string[]; timezoneId?: string }): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  storages.opening++;
  let opened: { browser: Browser; context: BrowserContext; page: Page };
  try {
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: o.viewport, acceptDownloads: true, ...(o.timezoneId ? { timezoneId: o.timezoneId } : {}) });
    opened = { browser, context, page: await context.newPage() };
  } finally {
    storages.opening--;
  }
  const { browser, context, page } = opened;
  page.setDefaultTimeout(90_000);
  page.on('pageerror', (e) => o.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !o.ignore.test(m.text())) o.problems.push(`console: ${m.text()}`);
  });
  return { browser, context, page };
}

/** Close the browser of {@link openConsolePage}, then disable the storages playwright ran while it was opened (above). */
export async function closeConsolePage(browser: Browser | undefined): Promise<void> {
  await browser?.close();
  for (const s of storages.seen) s.disable();
}

/** Sign in to the console at `url` as `user` (whoever was signed in before is signed out first: the session is cleared). */
export async function signInConsole(page: Page, url: string, user: string, password: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.evaluate('sessionStorage.clear()');
  await page.reload();
  await page.getByLabel('User').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('who').waitFor();
}

/**
 * axe-core on the page as it stands (or on the part `include` selects): its serious and critical violations, each
 * as `id: help (the first three targets)` — a test expects none — and how many rules passed.
 */
export async function axeOf(page: Page, include?: string): Promise<{ bad: string[]; passes: number }> {
  const b = new AxeBuilder({ page });
  const r = await (include ? b.include(include) : b).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  return { bad: bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`), passes: r.passes.length };
}

/**
 * Click the button named `button` and return the download it starts. When the page shows a refusal instead (the
 * console's error note, role="alert"), fail at once with its words; when no download comes at all, fail saying
 * what the page shows (a sign-in form, a note) rather than only that the wait timed out.
 */
export async function downloadBy(page: Page, button: string): Promise<Download> {
  const alert = page.locator('p.error[role="alert"]');
  const before = await alert.count();
  const refused = (async (): Promise<never> => {
    await alert.nth(before).waitFor({ timeout: 130_000 });
    throw new Error(`the download of "${button}" did not start; the page says: ${(await alert.nth(before).textContent())?.trim()}`);
  })();
  refused.catch(() => undefined);
  try {
    const [d] = await Promise.race([Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.getByRole('button', { name: button }).click()]), refused]);
    return d;
  } catch (err) {
    const shown = await page.locator('body').innerText({ timeout: 5_000 }).catch(() => '(the page did not answer)');
    throw new Error(`${(err as Error).message}\nthe page at ${page.url()} shows: ${shown.replace(/\s+/g, ' ').slice(0, 600)}`, { cause: err });
  }
}
