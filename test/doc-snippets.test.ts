/**
 * Every TypeScript snippet in the user documents (README.md, CONTRIBUTING.md, docs/*.md)
 * type-checks against the package's entry points, so a snippet copied from the docs compiles.
 *
 * Conventions a snippet may use (CONTRIBUTING.md describes them for writers):
 *
 * - A block whose first line is a comment naming a file (`// src/tools/lookup-order.ts`) is that
 *   file of one project per document; the blocks of a document import each other by those paths.
 *   Any other block is a module of its own.
 * - Names a snippet uses without defining them (an agent declared elsewhere in the text, the
 *   Hono `app` of a route snippet, the `step` of a Workflow's `run`) are declared in PRELUDE.
 *   Keep it small: a snippet that can define what it uses should.
 * - A snippet that imports `@flue/runtime/node`, `@flue/runtime/testing` or a `node:` module is
 *   checked against Node's globals; every other one against the Workers runtime's, as in a
 *   generated project.
 *
 * Both programs run in one tsc process (`tsc -b` over two projects), and one deliberately broken
 * snippet rides along in each, so the test also shows that a broken snippet fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';

const root = path.join(import.meta.dirname, '..');
const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');

/** The documents whose snippets are checked, relative to the repository root. */
export function documents(): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', 'CONTRIBUTING.md', ...docs].filter((f) => existsSync(path.join(root, f)));
}

export interface Snippet {
  doc: string;
  /** 1-based line of the first code line in the document. */
  line: number;
  code: string;
  /** The `// src/…` path the first line names, if any. */
  file?: string;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;

export function snippets(doc: string, text: string): Snippet[] {
  const out: Snippet[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j]!;
      if (line.trimStart().startsWith(fence!) && line.trim().replace(/[`~]/g, '') === '') break;
      body.push(line.startsWith(indent!) ? line.slice(indent!.length) : line.trimStart());
    }
    if (lang === 'ts' || lang === 'typescript') {
      const named = /^\/\/ (src\/[\w./-]+\.ts)\b/.exec(body[0] ?? '');
      out.push({ doc, line: i + 2, code: body.join('\n'), ...(named ? { file: named[1] } : {}) });
    }
    i = j;
  }
  return out;
}

/**
 * What snippets may use without defining. Agents stand for the ones the text defines elsewhere;
 * `app` is the project's Hono app; `step`/`event` are a Workflow `run()`'s parameters.
 */
const PRELUDE = `
import type { Hono, MiddlewareHandler } from 'hono';
import type { AgentFunction } from '@flue/runtime';

declare global {
  const OrderAssistant: AgentFunction;
  const Reviewer: AgentFunction;
  const Triage: AgentFunction;
  const Classifier: AgentFunction;
  const IssueTriage: AgentFunction;
  const Payments: AgentFunction;
  const ReleaseManager: AgentFunction;
  const app: Hono<{ Bindings: Env }>;
  /** Your authentication middleware. */
  const requireUser: MiddlewareHandler;
  /** The project's wrangler bindings (generated projects declare their own). */
  interface Env {
    NIGHTLY_REVIEW: FlueWorkflow<{ date: string }>;
    GITHUB_WEBHOOK_SECRET: string;
  }
  interface FlueWorkflow<P> {
    create(options: { id?: string; params: P }): Promise<{ id: string }>;
    get(id: string): Promise<{ id: string; status(): Promise<{ status: string; output?: unknown; error?: unknown }> }>;
  }
  const id: string;
  const message: string;
  function token(): Promise<string>;
  function collectFindings(date: string): Promise<string>;
  function fileReport(text: string): Promise<void>;
  function notifyTeam(submissionId: string): Promise<void>;
}
export {};
`;

/** Only for Worker snippets: a Workflow `run()`'s parameters. */
const WORKERS_PRELUDE = `
import type { WorkflowEvent, WorkflowStep } from 'cloudflare:workers';

declare global {
  const step: WorkflowStep;
  const event: WorkflowEvent<{ date: string }>;
}
export {};
`;

/**
 * Agent modules snippets import (`./agents/reviewer.ts`) whose code the text does not show; each
 * document's project gets them unless one of its blocks is that file.
 */
const STUB_AGENTS: Record<string, string> = {
  'src/agents/reviewer.ts': 'Reviewer',
  'src/agents/reporter.ts': 'Reporter',
  'src/agents/support.ts': 'Support',
};

/** A snippet that must fail, proving the check catches a broken one. */
const BROKEN = "import { useModel } from '@flue/runtime';\nuseModel(42);\n";

interface Program {
  name: 'workers' | 'node';
  files: Map<string, Snippet | 'broken'>;
}

function isNode(code: string): boolean {
  return /from '(?:@flue\/runtime\/(?:node|testing)|node:[\w/]+)'/.test(code);
}

const slug = (doc: string) => doc.replace(/\.md$/, '').replace(/[^\w]+/g, '-');

/** Writes the two projects under `dir`; returns tsc's diagnostics mapped back to document lines. */
export function checkSnippets(all: Snippet[], dir: string): { errors: string[]; brokenCaught: Record<string, boolean> } {
  const programs: Program[] = [
    { name: 'workers', files: new Map() },
    { name: 'node', files: new Map() },
  ];
  let counter = 0;
  for (const snippet of all) {
    const program = programs[isNode(snippet.code) ? 1 : 0]!;
    const rel = snippet.file
      ? path.posix.join(slug(snippet.doc), snippet.file)
      : path.posix.join(slug(snippet.doc), 'src', `snippet-line-${snippet.line}-${counter++}.ts`); // beside app.ts, so `./agents/x.ts` resolves
    const target = path.join(dir, rel);
    mkdirSync(path.dirname(target), { recursive: true });
    // `export {}` makes every snippet a module (top-level await, no shared script scope).
    writeFileSync(target, `${snippet.code}\nexport {};\n`);
    program.files.set(rel, snippet);
  }
  const stubs: string[] = [];
  for (const doc of new Set(all.map((s) => s.doc))) {
    for (const [file, name] of Object.entries(STUB_AGENTS)) {
      const rel = path.posix.join(slug(doc), file);
      if (all.some((s) => s.doc === doc && s.file === file)) continue;
      stubs.push(rel);
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(
        path.join(dir, rel),
        `'use agent';\nimport { useModel } from '@flue/runtime';\nexport function ${name}() {\n  useModel('anthropic/claude-haiku-4-5');\n  return '${name}.';\n}\n`,
      );
    }
  }
  writeFileSync(path.join(dir, 'prelude.d.ts'), PRELUDE);
  writeFileSync(path.join(dir, 'prelude-workers.d.ts'), WORKERS_PRELUDE);
  const references: { path: string }[] = [];
  for (const program of programs) {
    const broken = `broken-${program.name}.ts`;
    writeFileSync(path.join(dir, broken), BROKEN);
    program.files.set(broken, 'broken');
    const compilerOptions = {
      composite: true,
      emitDeclarationOnly: true,
      declaration: true,
      outDir: `out-${program.name}`,
      target: 'ES2023',
      module: 'ESNext',
      moduleResolution: 'bundler',
      lib: program.name === 'node' ? ['ES2023', 'DOM', 'DOM.Iterable'] : ['ES2023'],
      types: [program.name === 'node' ? 'node' : '@cloudflare/workers-types', '@flue/runtime/skill-md'],
      strict: true,
      skipLibCheck: true,
      allowImportingTsExtensions: true,
      verbatimModuleSyntax: true,
      noErrorTruncation: true,
      // The checkout's own @flue/runtime (a self link in node_modules), read from its sources: the
      // same entry points `npm pack` publishes.
      customConditions: ['flue-source'],
    };
    const config = `tsconfig.${program.name}.json`;
    // Stubs sit in both programs: either may import them.
    const files = [...program.files.keys(), ...stubs, 'prelude.d.ts', ...(program.name === 'workers' ? ['prelude-workers.d.ts'] : [])];
    writeFileSync(path.join(dir, config), JSON.stringify({ compilerOptions, files }, null, 2));
    references.push({ path: `./${config}` });
  }
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ files: [], references }));
  const run = spawnSync(process.execPath, [tsc, '-b', path.join(dir, 'tsconfig.json'), '--pretty', 'false'], {
    cwd: dir,
    encoding: 'utf8',
  });
  const located = new Map<string, Snippet | 'broken'>();
  for (const program of programs) for (const [rel, s] of program.files) located.set(rel, s);
  const errors: string[] = [];
  const brokenCaught: Record<string, boolean> = { workers: false, node: false };
  for (const line of `${run.stdout}${run.stderr}`.split('\n')) {
    const m = /^(.+?)\((\d+),(\d+)\): (error .*)$/.exec(line.trim());
    if (!m) {
      if (line.trim() !== '' && !/^\s/.test(line)) errors.push(line.trim());
      continue;
    }
    const rel = path.relative(dir, path.resolve(dir, m[1]!)).split(path.sep).join('/');
    const source = located.get(rel);
    if (source === 'broken') {
      brokenCaught[rel.replace(/^broken-|\.ts$/g, '')] = true;
      continue;
    }
    if (source) errors.push(`${source.doc}:${source.line + Number(m[2]) - 1}: ${m[4]}`);
    else errors.push(`${rel}:${m[2]}: ${m[4]}`);
  }
  if (run.status !== 0 && errors.length === 0 && !brokenCaught.workers && !brokenCaught.node) {
    errors.push(`tsc exited ${run.status}: ${run.stdout}${run.stderr}`);
  }
  return { errors, brokenCaught };
}

mkdirSync(path.join(root, '.tmp-tests'), { recursive: true });
const scratch = mkdtempSync(path.join(root, '.tmp-tests', 'doc-snippets-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test('the extractor finds fenced ts blocks, indented ones and named files included', () => {
  const text = [
    '# T',
    '```ts',
    '// src/agents/a.ts',
    "'use agent';",
    '```',
    '- item',
    '  ```typescript',
    '  const x = 1;',
    '  ```',
    '```sh',
    'npm test',
    '```',
  ].join('\n');
  expect(snippets('T.md', text)).toEqual([
    { doc: 'T.md', line: 3, code: "// src/agents/a.ts\n'use agent';", file: 'src/agents/a.ts' },
    { doc: 'T.md', line: 8, code: 'const x = 1;' },
  ]);
});

test('every TypeScript snippet in the user documents type-checks, and a broken one fails', () => {
  const all = documents().flatMap((doc) => snippets(doc, readFileSync(path.join(root, doc), 'utf8')));
  expect(all.length).toBeGreaterThan(10);
  const { errors, brokenCaught } = checkSnippets(all, scratch);
  expect(errors, `Snippets that do not type-check:\n${errors.join('\n')}`).toEqual([]);
  expect(brokenCaught, 'the deliberately broken snippet of each program is reported').toEqual({ workers: true, node: true });
}, 120_000);
