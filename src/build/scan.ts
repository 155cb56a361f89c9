/**
 * The `'use agent'` scan (build-and-cli.md §1): which modules are agent modules, which of their
 * exports are agents, and each agent's durable identity, class and binding names.
 *
 * Pipeline per file: a raw-text pre-filter (`use agent` substring), one non-bundling esbuild
 * transform (TS → JS; also the parse check), the directive prologue read by acorn from the
 * original text, then exports and `agentName` statics read by acorn from esbuild's output.
 *
 * Why the prologue is not read from esbuild's output: esbuild normalizes strings
 * (`'use\x20agent'` prints as `"use agent"`) and hoists a string statement to the top once the
 * TS before it is erased (`import type …; 'use agent'`, `type T = …; 'use agent'`,
 * `'use agent'!;`, `'use agent' as string;` all print as a leading `"use agent";`). The prologue
 * is plain JavaScript in TS files too, so acorn reads it from the original text, statement by
 * statement, and stops before any TS syntax (scan-prologue.ts). `agentName` statics are read in
 * scan-agent-name.ts.
 */
import { readdir, readFile } from 'node:fs/promises';
import { SourceMap, type SourceMapPayload } from 'node:module';
import path from 'node:path';
import { transform, type Loader, type Message } from 'esbuild';
import { parse, type AnyNode, type Expression, type Program } from 'acorn';
import { ownExports } from './module-exports.ts';
import {
  AgentModuleParseError,
  AnonymousAgentExportError,
  AsyncAgentExportError,
  DuplicateAgentExportError,
  InvalidAgentIdentityError,
  InvalidAgentNameStaticError,
  MisplacedUseAgentDirectiveError,
  MissingUseAgentDirectiveError,
  NoAgentExportsError,
} from './build-errors.ts';
import { AGENT_IDENTITY_PATTERN } from '../shared/identity.ts';
import { compareCodeUnits } from '../shared/values.ts';
import { bindingName, checkIdentityCollisions, className } from './names.ts';
import { boundNames, findAgentNameWrites, type AgentNameWrite } from './scan-agent-name.ts';
import { isUseAgentDirective, readDirectivePrologue } from './scan-prologue.ts';
import type { ScannedAgent, ScannedModule, ScanResult } from './scan-types.ts';

export interface ScanAgentsOptions {
  /** Project root; the default scan covers `<root>/src`. */
  root: string;
  /**
   * Files to scan instead of the default tree walk (absolute or relative to `root`), e.g. the
   * config `agents` glob's matches. Taken as given: no exclusions apply.
   */
  files?: string[];
}

const SCANNED_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs']);
const EXCLUDED_DIRECTORIES = new Set(['node_modules', 'dist', '.wrangler']);
const READ_CONCURRENCY = 16;

/** Scans the project and checks identities across all agent modules. */
export async function scanAgents(options: ScanAgentsOptions): Promise<ScanResult> {
  const root = path.resolve(options.root);
  const listed = options.files ? options.files.map((file) => path.resolve(root, file)) : await listSourceFiles(path.join(root, 'src'));
  // Code-unit order, not locale order: the result must not depend on the machine.
  const files = [...new Set(listed)].sort(compareCodeUnits);

  // Only the default walk applies the src/agents/ convention: a config `agents` glob says itself
  // which files hold agents.
  const agentsDir = path.join(root, 'src', 'agents') + path.sep;
  const outcomes = await mapLimit(files, READ_CONCURRENCY, async (file) =>
    scanModule(file, await readFile(file, 'utf8'), { agentsDir: !options.files && file.startsWith(agentsDir) }),
  );

  const modules: ScannedModule[] = [];
  // Report the first failure in path order so the same tree always fails the same way.
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') throw outcome.reason;
    if (outcome.value !== undefined) modules.push(outcome.value);
  }
  checkIdentityCollisions(
    modules.flatMap((module) =>
      module.agents.map((agent) => ({ identity: agent.identity, file: module.file, exportName: agent.exportName })),
    ),
  );
  return { modules };
}

export interface ScanModuleOptions {
  /**
   * The module sits in `src/agents/`, where agents live by convention: exporting capitalized
   * functions without the directive is then a build error instead of a silent non-agent module.
   */
  agentsDir?: boolean;
}

/**
 * Scans one module. Returns `undefined` when the module is not an agent module; throws a build
 * error when it is marked but malformed, when it mentions `use agent` and does not parse, or when
 * it looks like an agent module whose directive is misplaced or (in `src/agents/`) missing.
 */
export async function scanModule(file: string, source: string, options: ScanModuleOptions = {}): Promise<ScannedModule | undefined> {
  // The only raw-text test: a cheap filter so most files never reach esbuild.
  const mentioned = source.includes('use agent');
  if (!mentioned && !options.agentsDir) return undefined;
  const absolute = path.resolve(file);

  if (!mentioned) {
    // An unmarked module is not ours to reject for syntax: the bundler reports that.
    let program: Program;
    try {
      program = parse((await transformToJs(absolute, source)).code, { ecmaVersion: 'latest', sourceType: 'module' });
    } catch {
      return undefined;
    }
    const names = exportedAgentShapedNames(program);
    if (names.length > 0) throw new MissingUseAgentDirectiveError(absolute, names);
    return undefined;
  }

  const transformed = await transformToJs(absolute, source);
  const output = transformed.code;
  const marked = readDirectivePrologue(source).some(isUseAgentDirective);

  let program: Program;
  try {
    program = parse(output, { ecmaVersion: 'latest', sourceType: 'module' });
  } catch (error) {
    if (!marked) return undefined;
    throw new AgentModuleParseError(absolute, `esbuild's output does not parse: ${describe(error)}`, error);
  }
  if (!marked) {
    const names = exportedAgentShapedNames(program);
    if (names.length > 0) {
      // A top-level `'use agent'` statement outside the prologue (esbuild prints near-misses such
      // as casts and parentheses as the plain string) is a directive written in the wrong place.
      if (program.body.some(isUseAgentStatement)) throw new MisplacedUseAgentDirectiveError(absolute, names);
      if (options.agentsDir) throw new MissingUseAgentDirectiveError(absolute, names);
    }
    return undefined;
  }
  return { file: absolute, agents: findAgents(absolute, program, transformed.lineOf) };
}

function isUseAgentStatement(node: AnyNode): boolean {
  return node.type === 'ExpressionStatement' && node.expression.type === 'Literal' && node.expression.value === 'use agent';
}

/**
 * Exports that would be agents if the module were marked: named exports of functions whose
 * exported name is capitalized, and a default-exported function with a capitalized name.
 */
function exportedAgentShapedNames(program: Program): string[] {
  const bindings = collectTopLevelBindings(program);
  const names: string[] = [];
  const consider = (exportName: string, localName: string): void => {
    const binding = bindings.get(localName);
    if (binding?.kind !== 'function') return;
    const name = exportName === 'default' ? binding.functionName : exportName;
    if (startsUppercase(name)) names.push(exportName === 'default' ? `default (${name})` : name);
  };
  for (const entry of ownExports(program)) {
    if (entry.kind === 'binding') consider(entry.exportName, entry.localName);
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// esbuild pass

interface TransformedModule {
  code: string;
  /** 1-based line in the original source of an offset in `code` (undefined when unmapped). */
  lineOf(offset: number): number | undefined;
}

async function transformToJs(file: string, source: string): Promise<TransformedModule> {
  try {
    const result = await transform(source, {
      loader: loaderFor(file),
      sourcefile: file,
      sourcemap: 'external',
      // No `format`: esbuild then keeps module syntax as written. With `format: 'esm'` it rewrites
      // `export default () => {}` to `var <Basename>_default = () => {}`, which cannot be told
      // apart from a user's own function of that name.
      target: 'es2022', // the bundle's target (§3.3); also lowers decorators, which acorn lacks
      logLevel: 'silent',
    });
    const code = result.code;
    let map: SourceMap | undefined;
    return {
      code,
      lineOf(offset) {
        // Errors only: the map is decoded the first time a location is asked for.
        map ??= new SourceMap(JSON.parse(result.map) as SourceMapPayload);
        const before = code.slice(0, offset);
        const line = before.split('\n').length - 1;
        const entry = map.findEntry(line, offset - (before.lastIndexOf('\n') + 1));
        return 'originalLine' in entry ? entry.originalLine + 1 : undefined;
      },
    };
  } catch (error) {
    throw new AgentModuleParseError(file, describeEsbuildFailure(error), error);
  }
}

function loaderFor(file: string): Loader {
  switch (path.extname(file).toLowerCase()) {
    case '.js':
    case '.mjs':
    case '.cjs':
      return 'js';
    case '.jsx':
      return 'jsx';
    case '.tsx':
      return 'tsx';
    default:
      return 'ts';
  }
}

function describeEsbuildFailure(error: unknown): string {
  const errors = (error as { errors?: Message[] } | undefined)?.errors;
  const first = Array.isArray(errors) ? errors[0] : undefined;
  if (first === undefined) return describe(error);
  const at = first.location ? `${first.location.line}:${first.location.column + 1}: ` : '';
  return `${at}${first.text}`;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Exports (esbuild's output)

type Binding = { kind: 'function'; functionName: string; async: boolean } | { kind: 'import' | 'class' | 'value' };

interface AgentCandidate {
  exportName: string;
  /** Module-scope binding exported; undefined for `export default (function Name() {})`. */
  localName: string | undefined;
  /** Identity unless an `agentName` static overrides it. */
  defaultIdentity: string;
  defaultIdentitySource: string;
  position: number;
  async: boolean;
}

function findAgents(file: string, program: Program, lineOf: (offset: number) => number | undefined): ScannedAgent[] {
  const bindings = collectTopLevelBindings(program);
  const candidates: AgentCandidate[] = [];

  const consider = (exportName: string, localName: string, position: number): void => {
    const binding = bindings.get(localName);
    // Imports are re-exports (an agent registers where it is defined); classes and other values
    // are not syntactically functions.
    if (binding === undefined || binding.kind !== 'function') return;
    if (exportName === 'default') {
      // A default export is an agent when the function's own name is capitalized.
      if (!startsUppercase(binding.functionName)) return;
      candidates.push({
        exportName,
        localName,
        defaultIdentity: binding.functionName,
        defaultIdentitySource: 'function name',
        position,
        async: binding.async,
      });
    } else if (startsUppercase(exportName)) {
      candidates.push({
        exportName,
        localName,
        defaultIdentity: exportName,
        defaultIdentitySource: 'export name',
        position,
        async: binding.async,
      });
    }
  };

  for (const entry of ownExports(program)) {
    if (entry.kind === 'binding') {
      consider(entry.exportName, entry.localName, entry.position);
      continue;
    }
    const fn = entry.node;
    const id = fn.type === 'ArrowFunctionExpression' ? null : fn.id;
    if (id == null) throw new AnonymousAgentExportError(file);
    if (startsUppercase(id.name)) {
      // `export default (function Triage() {})`: a named expression with no module binding.
      candidates.push({
        exportName: 'default',
        localName: undefined,
        defaultIdentity: id.name,
        defaultIdentitySource: 'function name',
        position: entry.position,
        async: fn.async,
      });
    }
  }

  candidates.sort((a, b) => a.position - b.position);
  rejectDuplicateExports(file, candidates);
  // The earliest point an async agent can be reported: before anything is deployed.
  const asyncAgent = candidates.find((candidate) => candidate.async);
  if (asyncAgent !== undefined) throw new AsyncAgentExportError(file, asyncAgent.exportName);

  const agentLocals = new Set(candidates.flatMap((c) => (c.localName === undefined ? [] : [c.localName])));
  const writes = findAgentNameWrites(program, agentLocals);

  const agents = candidates.map((candidate): ScannedAgent => {
    const identity = resolveIdentity(file, candidate, writes.get(candidate.localName ?? '') ?? [], lineOf);
    return {
      exportName: candidate.exportName,
      identity,
      className: className(identity),
      bindingName: bindingName(identity),
    };
  });
  if (agents.length === 0) throw new NoAgentExportsError(file);
  checkIdentityCollisions(agents.map((agent) => ({ identity: agent.identity, file, exportName: agent.exportName })));
  return agents;
}

function rejectDuplicateExports(file: string, candidates: AgentCandidate[]): void {
  const byLocal = new Map<string, string[]>();
  for (const candidate of candidates) {
    if (candidate.localName === undefined) continue;
    const names = byLocal.get(candidate.localName) ?? [];
    names.push(candidate.exportName);
    byLocal.set(candidate.localName, names);
  }
  for (const [localName, exportNames] of byLocal) {
    if (exportNames.length > 1) throw new DuplicateAgentExportError(file, localName, exportNames);
  }
}

function resolveIdentity(
  file: string,
  candidate: AgentCandidate,
  writes: AgentNameWrite[],
  lineOf: (offset: number) => number | undefined,
): string {
  const localName = candidate.localName ?? candidate.defaultIdentity;
  const invalid = writes.find((write) => write.problem !== undefined);
  if (invalid !== undefined) {
    throw new InvalidAgentNameStaticError(file, candidate.exportName, localName, invalid.problem!, lineOf(invalid.start));
  }
  if (writes.length > 1) {
    throw new InvalidAgentNameStaticError(file, candidate.exportName, localName, 'it is assigned more than once', lineOf(writes[1]!.start));
  }
  const literal = writes[0]?.value;
  const identity = literal ?? candidate.defaultIdentity;
  if (!AGENT_IDENTITY_PATTERN.test(identity)) {
    const source = literal !== undefined ? 'agentName static' : candidate.defaultIdentitySource;
    const line = lineOf(literal !== undefined ? writes[0]!.start : candidate.position);
    throw new InvalidAgentIdentityError(file, candidate.exportName, identity, source, AGENT_IDENTITY_PATTERN, line);
  }
  return identity;
}

/** Module-scope bindings of esbuild's output, with what each one holds. */
function collectTopLevelBindings(program: Program): Map<string, Binding> {
  const bindings = new Map<string, Binding>();
  for (const item of program.body) {
    const statement =
      (item.type === 'ExportNamedDeclaration' || item.type === 'ExportDefaultDeclaration') && item.declaration ? item.declaration : item;
    switch (statement.type) {
      case 'ImportDeclaration':
        for (const specifier of statement.specifiers) bindings.set(specifier.local.name, { kind: 'import' });
        break;
      case 'FunctionDeclaration':
        if (statement.id) bindings.set(statement.id.name, { kind: 'function', functionName: statement.id.name, async: statement.async });
        break;
      case 'ClassDeclaration':
        if (statement.id) bindings.set(statement.id.name, { kind: 'class' });
        break;
      case 'VariableDeclaration':
        for (const declarator of statement.declarations) {
          const init = declarator.init;
          if (declarator.id.type === 'Identifier' && init && isFunctionExpression(init)) {
            // The runtime `name` of the value: a named function expression keeps its own name,
            // an anonymous one takes the binding's name.
            const own = init.type === 'FunctionExpression' ? init.id?.name : undefined;
            const async = (init as { async?: boolean }).async === true;
            bindings.set(declarator.id.name, { kind: 'function', functionName: own ?? declarator.id.name, async });
          } else {
            for (const name of boundNames(declarator.id)) bindings.set(name, { kind: 'value' });
          }
        }
        break;
    }
  }
  return bindings;
}

function isFunctionExpression(node: Expression): boolean {
  return node.type === 'ArrowFunctionExpression' || node.type === 'FunctionExpression';
}

function startsUppercase(name: string): boolean {
  const first = name.charCodeAt(0);
  return first >= 65 && first <= 90; // ASCII A–Z only (§1.2)
}

// ---------------------------------------------------------------------------------------------
// Files

/** `src/**` files with scanned extensions, skipping build output, dependencies and dot-dirs. */
async function listSourceFiles(directory: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(directory, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const files: string[] = [];
  for (const entry of entries) {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) {
      if (EXCLUDED_DIRECTORIES.has(entry.name) || entry.name.startsWith('.')) continue;
      files.push(...(await listSourceFiles(full)));
    } else if (entry.isFile() && isScannedFile(entry.name)) {
      files.push(full);
    }
  }
  return files;
}

function isScannedFile(name: string): boolean {
  // Declaration files hold no runtime code, so they can never define an agent.
  if (/\.d\.m?ts$/.test(name)) return false;
  return SCANNED_EXTENSIONS.has(path.extname(name));
}

/** Like `Promise.allSettled(items.map(fn))`, at most `limit` at a time (no EMFILE on big trees). */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { status: 'fulfilled', value: await fn(items[index]!) };
      } catch (reason) {
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
