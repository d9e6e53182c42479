/**
 * Headless Chromium for the console's end-to-end tests: the system's chromium (CI installs it), one context
 * at a viewport (and, when given, in a time zone of its own: `timezoneId`), one page with a 90 s default timeout (a hang guard, not a speed limit: a download took over 30 s
 * in CI while the other worker ran CPU-bound seeds) whose page errors and console errors are collected into
 * `problems` (the errors a test provokes on purpose — refused requests of the statuses `ignore` matches — left
 * out), so a test can assert at its end that nothing else went wrong.
 */
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Download, type Page } from 'playwright-core';

export async function openConsolePage(o: { viewport: { width: number; height: number }; ignore: RegExp; problems: string[]; timezoneId?: string }): Promise<{ browser: Browser; context: BrowserContext; page: Page }> {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: o.viewport, acceptDownloads: true, ...(o.timezoneId ? { timezoneId: o.timezoneId } : {}) });
  const page = await context.newPage();
  page.setDefaultTimeout(90_000);
  page.on('pageerror', (e) => o.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !o.ignore.test(m.text())) o.problems.push(`console: ${m.text()}`);
  });
  return { browser, context, page };
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
