/**
 * Responses checked against the API's own OpenAPI document by independent tools: the document is validated by
 * `@apidevtools/swagger-parser` (the OpenAPI 3.1 meta-schema and its rules), and a response is checked as a
 * generated client would read it — its status is documented for the operation (exactly, or by its `4XX`/`5XX`
 * range), its media type is one the document lists for that status, and its body validates against the schema
 * documented for that media type (Ajv, JSON Schema 2020-12, which is what an OpenAPI 3.1 schema is).
 *
 * A request to a path or a method the document does not have must be answered by a problem (4xx,
 * `application/problem+json`, the document's `Problem` schema). Hidden routes (the document itself, /metrics,
 * the console) are not in the document and are not checked.
 *
 * `test/helpers/api.ts` `call()` and `test/helpers/identity-api.ts` `req()` run this on every response, by default
 * (see {@link openApiCheckOn}): a test that gets an answer the document does not describe fails at the call.
 */
import { createHash } from 'node:crypto';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export is the function, or holds it
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (a: Ajv2020) => void;

type Json = Record<string, unknown>;

/** Not in the document on purpose (`schema.hide`), so not checked. */
const HIDDEN = [/^\/openapi\.json$/, /^\/metrics$/, /^\/console(\/|$)/];

/** What was checked of one response. */
export interface Conformance {
  /** `METHOD /template` of the document, or undefined for a hidden route or an unknown one (a 4xx problem). */
  readonly operation: string | undefined;
  /** The response key of the document it matched (`200`, `4XX`, …). */
  readonly response: string | undefined;
  readonly mediaType: string;
  /** Every way the response departs from the document (empty: it conforms). */
  readonly errors: readonly string[];
}

export class OpenApiDocument {
  private readonly ajv: Ajv2020;
  /** By the pointer checked, and by the schema's text (see validator()). */
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly templates: { method: string; template: string; re: RegExp; literal: number }[] = [];

  private constructor(readonly doc: Json) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    const paths = (doc['paths'] ?? {}) as Record<string, Record<string, unknown>>;
    for (const [template, ops] of Object.entries(paths)) {
      const parts = template.split('/');
      const re = new RegExp(`^${parts.map((p) => (/^\{[^}]+\}$/.test(p) ? '[^/]+' : p.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))).join('/')}$`);
      const literal = parts.filter((p) => !p.startsWith('{')).length;
      for (const method of Object.keys(ops)) if (['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].includes(method)) this.templates.push({ method, template, re, literal });
    }
    // the most literal template first: /runs/{id}/release before a hypothetical /runs/{id}/{file}
    this.templates.sort((a, b) => b.literal - a.literal);
  }

  /**
   * The document as served at `${url}/openapi.json`, validated by swagger-parser.
   * @throws Error when the document is not a valid OpenAPI document (swagger-parser's message).
   */
  static async load(url: string): Promise<OpenApiDocument> {
    const res = await fetch(`${url}/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /openapi.json: ${res.status}`);
    return OpenApiDocument.parse(await res.text());
  }

  /**
   * The document from its text, validated by swagger-parser — once per distinct text in this process: every
   * daemon of a test file serves the same document, and the validation and the Ajv compilations are the check's
   * cost, so a document already seen is the same (already compiled) instance.
   * @throws Error when the document is not a valid OpenAPI document (swagger-parser's message).
   */
  static parse(text: string): Promise<OpenApiDocument> {
    const key = createHash('sha256').update(text).digest('hex');
    let d = byText.get(key);
    if (!d) {
      d = (async () => {
        const doc = JSON.parse(text) as Json;
        // swagger-parser dereferences what it validates: give it a copy, keep the document as served
        await SwaggerParser.validate(structuredClone(doc) as never);
        return new OpenApiDocument(doc);
      })();
      d.catch(() => byText.delete(key));
      byText.set(key, d);
    }
    return d;
  }

  /** The operation `method path` falls under (path as requested, query ignored). */
  operationOf(method: string, path: string): { template: string; op: Json } | undefined {
    const m = method.toLowerCase();
    const p = path.split('?')[0]!;
    const t = this.templates.find((x) => x.method === m && x.re.test(p));
    if (!t) return undefined;
    return { template: t.template, op: ((this.doc['paths'] as Record<string, Record<string, Json>>)[t.template]![m])! };
  }

  /** Check one response of `method path` (see the file comment). `text` is the body as received. */
  check(method: string, path: string, res: { status: number; type: string; text: string }): Conformance {
    const p = path.split('?')[0]!;
    const mediaType = res.type.split(';')[0]!.trim().toLowerCase();
    const errors: string[] = [];
    if (HIDDEN.some((h) => h.test(p))) return { operation: undefined, response: undefined, mediaType, errors };
    const found = this.operationOf(method, p);
    if (!found) {
      // not in the document: only a refusal is a right answer
      if (res.status < 400 || res.status >= 500) errors.push(`${method} ${p} is not in the document, yet answered ${res.status}`);
      errors.push(...this.validate('#/components/schemas/Problem', 'application/problem+json', mediaType, res.text, method));
      return { operation: undefined, response: undefined, mediaType, errors };
    }
    const operation = `${method.toUpperCase()} ${found.template}`;
    const responses = (found.op['responses'] ?? {}) as Record<string, Json>;
    const key = [String(res.status), `${String(res.status)[0]}XX`, 'default'].find((k) => k in responses);
    if (key === undefined) {
      errors.push(`${operation}: status ${res.status} is not documented (documented: ${Object.keys(responses).join(', ')})`);
      return { operation, response: undefined, mediaType, errors };
    }
    const content = (responses[key]!['content'] ?? {}) as Record<string, { schema?: Json }>;
    if (Object.keys(content).length === 0) {
      if (res.text.length > 0) errors.push(`${operation} ${key}: a body is sent where the document has none`);
      return { operation, response: key, mediaType, errors };
    }
    const media = content[mediaType];
    if (!media) {
      errors.push(`${operation} ${key}: media type "${mediaType}" is not documented (documented: ${Object.keys(content).join(', ')})`);
      return { operation, response: key, mediaType, errors };
    }
    if (media.schema) {
      const pointer = `#/paths/${esc(found.template)}/${method.toLowerCase()}/responses/${esc(key)}/content/${esc(mediaType)}/schema`;
      errors.push(...this.validate(pointer, mediaType, mediaType, res.text, method).map((e) => `${operation} ${key}: ${e}`));
    }
    return { operation, response: key, mediaType, errors };
  }

  /** Check, and throw on any departure (for tests that want a failure at the call). */
  assert(method: string, path: string, res: { status: number; type: string; text: string }): Conformance {
    const c = this.check(method, path, res);
    if (c.errors.length > 0) throw new Error(`the response of ${method} ${path} (${res.status}, ${res.type || 'no content-type'}) departs from the OpenAPI document:\n  ${c.errors.join('\n  ')}\n  body: ${res.text.slice(0, 400)}`);
    return c;
  }

  /** Validate `text` received as `got` against the schema at `pointer` documented for media type `want`. */
  private validate(pointer: string, want: string, got: string, text: string, method: string): string[] {
    if (got !== want) return [`media type "${got}", documented "${want}"`];
    if (method.toUpperCase() === 'HEAD' || want === 'text/event-stream') return []; // no body, or a stream (read by SseReader)
    let value: unknown;
    if (want === 'application/json' || want.endsWith('+json')) {
      try {
        value = JSON.parse(text);
      } catch {
        return [`the body is not JSON: ${text.slice(0, 80)}`];
      }
    } else if (want === 'application/pdf') {
      return text.startsWith('%PDF-') ? [] : ['the body is not a PDF'];
    } else value = text; // a text format: the document's schema is a string
    const v = this.validator(pointer);
    if (v(value)) return [];
    return (v.errors ?? []).map((e) => `body${e.instancePath} ${e.message ?? 'is invalid'}${e.params && Object.keys(e.params).length > 0 ? ` ${JSON.stringify(e.params)}` : ''}`);
  }

  private validator(pointer: string): ValidateFunction {
    let v = this.validators.get(pointer);
    if (v) return v;
    const target = resolvePointer(this.doc, pointer) as Json;
    // compiled by the schema's text, not its place: the 4XX and 5XX of every operation are the one `$ref` to
    // Problem, compiled once for all of them
    const key = JSON.stringify(target);
    v = this.compiled.get(key);
    if (!v) {
      // the schema with the document's components beside it, so its "#/components/schemas/…" refs resolve
      v = this.ajv.compile({ ...target, components: this.doc['components'] });
      this.compiled.set(key, v);
    }
    this.validators.set(pointer, v);
    return v;
  }
}

function esc(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

function resolvePointer(doc: unknown, pointer: string): unknown {
  let at = doc;
  for (const raw of pointer.replace(/^#\//, '').split('/')) {
    const k = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    at = (at as Record<string, unknown>)[k];
    if (at === undefined) throw new Error(`no ${pointer} in the document`);
  }
  return at;
}

/** Validated documents by the SHA-256 of their text (see {@link OpenApiDocument.parse}). */
const byText = new Map<string, Promise<OpenApiDocument>>();
const loaded = new Map<string, Promise<OpenApiDocument>>();

/** The validated document of the daemon at `url`, fetched once per daemon (and validated once per distinct text). */
export function openApiOf(url: string): Promise<OpenApiDocument> {
  let d = loaded.get(url);
  if (!d) {
    d = OpenApiDocument.load(url);
    d.catch(() => loaded.delete(url));
    loaded.set(url, d);
  }
  return d;
}

/**
 * Whether the API test helpers check every response against the document: yes, unless `LK_CHECK_OPENAPI=0`, and
 * that only with the reason in `LK_CHECK_OPENAPI_REASON` (a run without the check says why). Any other value of
 * `LK_CHECK_OPENAPI` than `1` or `0` is a mistake, not a way to turn the check off.
 * @throws Error for `LK_CHECK_OPENAPI=0` without a reason, or a value other than `0`/`1`.
 */
export function openApiCheckOn(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env['LK_CHECK_OPENAPI'];
  if (v === undefined || v === '' || v === '1') return true;
  if (v !== '0') throw new Error(`LK_CHECK_OPENAPI=${v}: 1 (the default) checks every API response against the OpenAPI document, 0 turns the check off (with LK_CHECK_OPENAPI_REASON)`);
  if (!env['LK_CHECK_OPENAPI_REASON']?.trim()) throw new Error('LK_CHECK_OPENAPI=0 turns off the OpenAPI check of every API response: name the reason in LK_CHECK_OPENAPI_REASON');
  return false;
}
