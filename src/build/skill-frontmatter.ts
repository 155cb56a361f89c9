/**
 * The build's SKILL.md frontmatter reader (build-and-cli.md §2.1): the `yaml` package, with the
 * failsafe schema so every scalar stays a string (`version: 1.0` is "1.0"). Errors and warnings
 * (unresolved tags, …) are problems naming the line; the build fails on them.
 */
import { isMap, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import type { Document } from 'yaml';
import type { FrontmatterReader } from '../shared/skill-format.ts';

export const readYamlFrontmatter: FrontmatterReader = (yaml, firstLine) => {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yaml, { schema: 'failsafe', prettyErrors: false, lineCounter, uniqueKeys: true });
  const keys = keysByOffset(doc);
  const problems = [...doc.errors, ...doc.warnings].map((error) => {
    const line = lineCounter.linePos(error.pos[0]).line + firstLine - 1;
    // Worded as the runtime's reader words it, naming the key ("Map keys must be unique" does not).
    const key = error.code === 'DUPLICATE_KEY' ? keys.get(error.pos[0]) : undefined;
    if (key !== undefined) return `line ${line}: duplicate key "${key}"`;
    const hint = error.code === 'BLOCK_AS_IMPLICIT_KEY' ? ' (quote a value that contains ": ")' : '';
    return `line ${line}: ${error.message}${hint}`;
  });
  if (doc.contents !== null && !isMap(doc.contents)) {
    return { data: undefined, problems: [...problems, `line ${firstLine}: must be a map of "key: value" pairs`] };
  }
  const data = (doc.contents === null ? {} : doc.toJS({ maxAliasCount: 100 })) as Record<string, unknown>;
  return { data, problems };
};

/** Every scalar map key by the offset it starts at, where a duplicate-key error points. */
function keysByOffset(doc: Document): Map<number, string> {
  const keys = new Map<number, string>();
  visit(doc, {
    Pair: (_, pair) => {
      if (isScalar(pair.key) && pair.key.range) keys.set(pair.key.range[0], String(pair.key.value));
    },
  });
  return keys;
}
