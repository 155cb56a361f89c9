/**
 * The build's SKILL.md frontmatter reader (build-and-cli.md §2.1): the `yaml` package, with the
 * failsafe schema so every scalar stays a string (`version: 1.0` is "1.0"). Errors and warnings
 * (unresolved tags, …) are problems naming the line; the build fails on them.
 */
import { isMap, LineCounter, parseDocument } from 'yaml';
import type { FrontmatterReader } from '../shared/skill-format.ts';

export const readYamlFrontmatter: FrontmatterReader = (yaml, firstLine) => {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yaml, { schema: 'failsafe', prettyErrors: false, lineCounter, uniqueKeys: true });
  const problems = [...doc.errors, ...doc.warnings].map((error) => {
    const line = lineCounter.linePos(error.pos[0]).line + firstLine - 1;
    const hint = error.code === 'BLOCK_AS_IMPLICIT_KEY' ? ' (quote a value that contains ": ")' : '';
    return `line ${line}: ${error.message}${hint}`;
  });
  if (doc.contents !== null && !isMap(doc.contents)) {
    return { data: undefined, problems: [...problems, `line ${firstLine}: must be a map of "key: value" pairs`] };
  }
  const data = (doc.contents === null ? {} : doc.toJS({ maxAliasCount: 100 })) as Record<string, unknown>;
  return { data, problems };
};
