/**
 * Tag lists as YAML in the style of config/site.yaml: one flow mapping per
 * tag, so that a list pastes under an equipment's `tags:` as it is. Comments
 * carry what a person must check and what could not be a tag (with the
 * reason), so nothing found is dropped silently. Pure.
 */
import { stringify } from 'yaml';

export interface YamlTagEntry {
  /** The tag, in the configuration's shape; absent when the entry is only a comment. */
  readonly tag?: object;
  /** Where it came from (a browse path, a CSV line). */
  readonly path?: string;
  readonly notes: readonly string[];
}

export interface YamlTagGroup {
  /** An equipment id (lower-case letters, digits, dashes): a plain YAML key. */
  readonly key: string;
  readonly title?: string;
  readonly entries: readonly YamlTagEntry[];
}

function comment(text: string, indent: string): string {
  return text
    .split('\n')
    .map((l) => `${indent}#${l ? ` ${l}` : ''}`)
    .join('\n');
}

function flow(o: object): string {
  return stringify(o, { collectionStyle: 'flow', lineWidth: 0, defaultStringType: 'PLAIN', defaultKeyType: 'PLAIN' }).trim();
}

/** `header` lines as comments, then `<key>:` and its list for each group. */
export function renderTagGroups(header: readonly string[], groups: readonly YamlTagGroup[]): string {
  const out: string[] = header.map((h) => comment(h, ''));
  for (const g of groups) {
    const hasTags = g.entries.some((e) => e.tag);
    out.push(`${g.key}:${hasTags ? '' : ' []'}${g.title && g.title !== g.key ? ` # ${g.title}` : ''}`);
    for (const e of g.entries) {
      const lines = [e.path, ...e.notes.map((n) => (e.tag ? `CHECK: ${n}` : n))].filter((x): x is string => !!x);
      if (lines.length) out.push(comment(lines.join('\n'), '  '));
      if (e.tag) out.push(`  - ${flow(e.tag)}`);
    }
  }
  return `${out.join('\n')}\n`;
}
