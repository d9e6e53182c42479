/**
 * fast-check arbitraries from the JSON Schemas of an OpenAPI document: what a well-formed value of a parameter
 * or a request body looks like, so a fuzzer starts from valid requests and mutates them from there. Covers the
 * subset the API's zod schemas produce: $ref, anyOf/oneOf, enum, const, string (length, pattern), integer,
 * number, boolean, null, object (properties, required, additionalProperties) and array.
 */
import fc from 'fast-check';
import type { JsonSchema } from './api-routes.js';

/** Longest string generated for an unbounded string schema (the fuzzer makes huge ones on purpose elsewhere). */
const MAX_FREE_STRING = 120;

/**
 * An arbitrary of the values `schema` accepts.
 * @param components the document's `components.schemas`, for `$ref`
 * @throws Error for a schema construct outside the subset (a new kind of route would need it here)
 */
export function arbitraryOf(schema: JsonSchema, components: Readonly<Record<string, JsonSchema>> = {}): fc.Arbitrary<unknown> {
  const s = schema;
  if (typeof s['$ref'] === 'string') {
    const name = /^#\/components\/schemas\/(.+)$/.exec(s['$ref'])?.[1];
    const target = name === undefined ? undefined : components[name];
    if (!target) throw new Error(`unresolved $ref ${s['$ref']}`);
    return arbitraryOf(target, components);
  }
  const alternatives = (s['anyOf'] ?? s['oneOf']) as JsonSchema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((a) => arbitraryOf(a, components)));
  if (Array.isArray(s['enum'])) return fc.constantFrom(...(s['enum'] as unknown[]));
  if ('const' in s) return fc.constant(s['const']);
  const type = s['type'];
  if (Array.isArray(type)) return fc.oneof(...type.map((t) => arbitraryOf({ ...s, type: t }, components)));
  switch (type) {
    case 'string':
      return stringOf(s);
    case 'integer': {
      const min = Math.max(typeof s['minimum'] === 'number' ? s['minimum'] : -(2 ** 31), Number.MIN_SAFE_INTEGER);
      const max = Math.min(typeof s['maximum'] === 'number' ? s['maximum'] : 2 ** 31, Number.MAX_SAFE_INTEGER);
      return fc.oneof(fc.integer({ min: Math.max(min, -1000), max: Math.min(max, 1000) }), fc.maxSafeInteger().filter((n) => n >= min && n <= max), fc.constantFrom(min, max));
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, ...(typeof s['minimum'] === 'number' ? { min: s['minimum'] } : {}), ...(typeof s['maximum'] === 'number' ? { max: s['maximum'] } : {}) });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = (s['items'] as JsonSchema | undefined) ?? {};
      return fc.array(arbitraryOf(items, components), { minLength: (s['minItems'] as number | undefined) ?? 0, maxLength: Math.min((s['maxItems'] as number | undefined) ?? 4, 4) });
    }
    case 'object': {
      const props = (s['properties'] as Record<string, JsonSchema> | undefined) ?? {};
      const required = (s['required'] as string[] | undefined) ?? [];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = arbitraryOf(v, components);
      return fc.record(model, { requiredKeys: required.filter((k) => k in props) });
    }
    case undefined:
      // `{}` (anything): any JSON value
      return fc.jsonValue({ maxDepth: 2 });
    default:
      throw new Error(`schema type ${String(type)} is not covered`);
  }
}

function stringOf(s: JsonSchema): fc.Arbitrary<string> {
  const min = (s['minLength'] as number | undefined) ?? 0;
  const max = Math.min((s['maxLength'] as number | undefined) ?? MAX_FREE_STRING, MAX_FREE_STRING);
  if (typeof s['pattern'] === 'string') {
    const re = new RegExp(s['pattern']);
    return fc.stringMatching(re).filter((v) => v.length >= min && v.length <= ((s['maxLength'] as number | undefined) ?? Infinity));
  }
  return fc.string({ minLength: Math.min(min, max), maxLength: Math.max(min, max), unit: 'grapheme' });
}
