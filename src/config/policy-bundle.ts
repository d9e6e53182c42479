/**
 * Read a policy bundle folder from disk and hand its texts to the pure
 * compiler of src/policy (which does no I/O). A missing or corrupt bundle throws: the caller then holds
 * no bundle and `evaluate(…, null, …)` denies every write (fail closed).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { SiteConfig } from './schema.js';
import { LkError } from '../errors.js';
import type { PolicyBundle } from '../policy/bundle.js';
import { type AcceptedBundle, type ChangeControlEvent, checkChangeControl } from '../policy/change-control.js';
import { compilePolicyBundle } from '../policy/compile.js';
import { BUNDLE_FILES, type BundleFileName } from '../policy/schema.js';

export interface LoadedPolicyBundle {
  readonly bundle: PolicyBundle;
  /** To be written to the audit trail (with the change ref and approver) by the caller. */
  readonly changeControl: ChangeControlEvent;
}

export interface LoadPolicyOptions {
  readonly site: SiteConfig;
  /** Version and change ref of the last accepted bundle (from the store); omit on first start. */
  readonly lastAccepted?: AcceptedBundle | null;
  /** Every bundle version accepted on this node with its change ref (a reference belongs to one version, forever). */
  readonly history?: readonly AcceptedBundle[];
}

/**
 * Load, validate, compile and change-control a bundle folder.
 * @throws LkError(LK_POLICY_BUNDLE) when the folder or a file is missing, a file is not YAML, an unknown
 *   `.yaml` file is present, or validation fails (message names file:line: path).
 * @throws LkError(LK_POLICY_CHANGE_CONTROL) when the content changed without a new change reference.
 * @throws LkError(LK_POLICY_CHANGE_REF_REUSED) when the change reference already belongs to another accepted version.
 */
export function loadPolicyBundle(dir: string, options: LoadPolicyOptions): LoadedPolicyBundle {
  const bundle = readPolicyBundle(dir, options.site);
  return { bundle, changeControl: checkChangeControl(bundle, options.lastAccepted, options.history ?? []) };
}

/**
 * Load, validate and compile a bundle folder (no change control: the caller decides with the signature).
 * @throws LkError(LK_POLICY_BUNDLE) as {@link loadPolicyBundle}.
 */
export function readPolicyBundle(dir: string, site: SiteConfig): PolicyBundle {
  const abs = resolve(dir);
  const shown = displayName(abs);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new LkError('LK_POLICY_BUNDLE', `${shown}: policy bundle folder not found`, { dir: abs });
  }
  const expected = new Set<string>(Object.keys(BUNDLE_FILES));
  const stray = readdirSync(abs).filter((f) => /\.ya?ml$/i.test(f) && !expected.has(f));
  if (stray.length > 0) {
    throw new LkError('LK_POLICY_BUNDLE', `${shown}: unknown bundle file${stray.length > 1 ? 's' : ''} ${stray.join(', ')} (expected ${[...expected].join(', ')})`, { dir: abs, stray });
  }
  const texts: Partial<Record<BundleFileName, string>> = {};
  for (const name of expected as Set<BundleFileName>) {
    const f = join(abs, name);
    if (!existsSync(f)) continue;
    // a bundle file that cannot be read is a refused bundle (fail closed, audited), never a crash at start
    try {
      if (!statSync(f).isFile()) throw new LkError('LK_POLICY_BUNDLE', `${join(shown, name)}: is not a regular file`, { dir: abs, file: name });
      texts[name] = readFileSync(f, 'utf8');
    } catch (err) {
      if (LkError.is(err)) throw err;
      throw new LkError('LK_POLICY_BUNDLE', `${join(shown, name)}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, { dir: abs, file: name }, { cause: err });
    }
  }
  return compilePolicyBundle(texts, site, shown);
}

function displayName(abs: string): string {
  const rel = relative(process.cwd(), abs);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : abs;
}
