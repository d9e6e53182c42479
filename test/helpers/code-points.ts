/**
 * Strings of any Unicode code points, lone surrogates included: what fast-check's `fc.string({ unit: 'binary' })`
 * draws, without what that unit costs. On first use it builds a map of all 1,114,112 code points for its shrinker
 * (2.0 s of CPU and 85 MB of heap, measured), kept for the life of the process: a test worker running files one
 * after another (`isolate: false`) then marked those 85 MB at every full garbage collection of every later file.
 * Small code points come more often (fast-check's integer bias), as escapes and control characters should.
 */
import fc from 'fast-check';

export function anyCodePoints(o: { readonly maxLength?: number } = {}): fc.Arbitrary<string> {
  return fc.array(fc.integer({ min: 0, max: 0x10ffff }), o.maxLength !== undefined ? { maxLength: o.maxLength } : {}).map((cps) => String.fromCodePoint(...cps));
}
