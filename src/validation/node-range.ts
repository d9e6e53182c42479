/**
 * Whether a Node.js version satisfies the `engines.node` range of package.json, for the installation qualification.
 * linekeeper ships no semver library; this reads the comparators an engines range uses in practice and says when a
 * range is beyond them rather than guessing.
 */

/** Whether `version` satisfies an npm range of comparators (>=, >, <=, <, =, ^, ~, x) joined by spaces and `||`; null when the range is beyond that. */
export function satisfiesRange(version: string, range: string): boolean | null {
  const v = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!v) return null;
  const have = [Number(v[1]), Number(v[2]), Number(v[3])];
  const cmp = (a: readonly number[], b: readonly number[]): number => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  const bump = (nums: readonly number[], i: number): number[] => [0, 1, 2].map((j) => (j < i ? nums[j]! : j === i ? nums[j]! + 1 : 0));
  let any = false;
  for (const set of range.split('||')) {
    let all = true;
    for (const c of set.trim().split(/\s+/).filter(Boolean)) {
      const m = /^(>=|<=|>|<|=|\^|~)?v?(\d+|x|X|\*)(?:\.(\d+|x|X|\*))?(?:\.(\d+|x|X|\*))?$/.exec(c);
      if (!m) return null;
      const nums: number[] = [];
      for (const part of [m[2], m[3], m[4]]) {
        if (part === undefined || !/^\d+$/.test(part)) break;
        nums.push(Number(part));
      }
      const n = nums.length;
      const low = [0, 1, 2].map((j) => nums[j] ?? 0);
      const up = n === 0 ? null : bump(nums, n - 1);
      const op = m[1] ?? '=';
      let ok: boolean;
      if (op === '=') ok = n === 3 ? cmp(have, low) === 0 : up === null || (cmp(have, low) >= 0 && cmp(have, up) < 0);
      else if (op === '>=') ok = cmp(have, low) >= 0;
      else if (op === '>') ok = up !== null && (n === 3 ? cmp(have, low) > 0 : cmp(have, up) >= 0);
      else if (op === '<') ok = cmp(have, low) < 0;
      else if (op === '<=') ok = n === 3 ? cmp(have, low) <= 0 : up === null || cmp(have, up) < 0;
      else if (op === '~') ok = cmp(have, low) >= 0 && (n === 0 || cmp(have, bump(nums, Math.min(n - 1, 1))) < 0);
      else {
        const i = n === 0 ? -1 : low[0]! > 0 || n === 1 ? 0 : low[1]! > 0 || n === 2 ? 1 : 2;
        ok = cmp(have, low) >= 0 && (i < 0 || cmp(have, bump(low, i)) < 0);
      }
      all &&= ok;
    }
    any ||= all;
  }
  return any;
}
