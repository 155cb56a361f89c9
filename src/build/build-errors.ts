/**
 * Build diagnostics for the `'use agent'` scan (build-and-cli.md §1.2). The CLI prints these
 * without a stack, so each message alone must say what is wrong, where, and how to fix it.
 */

export interface AgentLocation {
  /** Path of the agent module, as the scan saw it. */
  file?: string;
  /** The name the agent is exported under (`default` for a default export). */
  exportName?: string;
}

export interface IdentityOccurrence extends AgentLocation {
  identity: string;
}

export class FlueBuildError extends Error {
  readonly file: string | undefined;
  readonly exportName: string | undefined;

  constructor(name: string, message: string, location: AgentLocation = {}, cause?: unknown) {
    super(`[flue] ${message}`, cause === undefined ? undefined : { cause });
    // Set explicitly rather than from `new.target.name`, which a minified CLI bundle would mangle.
    this.name = name;
    this.file = location.file;
    this.exportName = location.exportName;
    // A scanner stack tells the user nothing; keep `err.stack` as printable as the message.
    this.stack = `${name}: ${this.message}`;
  }
}

/**
 * A failure as the developer should read it: a `FlueBuildError` says everything in its message;
 * anything else (a bug, an unexpected failure) is shown with its stack.
 */
export function describeBuildError(error: unknown): string {
  if (error instanceof FlueBuildError) return error.message;
  if (error instanceof Error) return error.stack ?? error.message;
  return String(error);
}

export class NoAgentExportsError extends FlueBuildError {
  constructor(file: string) {
    super(
      'NoAgentExportsError',
      `${file} is marked 'use agent' but exports no agent. An agent is an exported function whose ` +
        'exported name starts with an uppercase letter (e.g. `export function Triage() {}`); ' +
        'classes, re-exports and non-function values do not count. Export an agent or remove the directive.',
      { file },
    );
  }
}

export class AnonymousAgentExportError extends FlueBuildError {
  constructor(file: string) {
    super(
      'AnonymousAgentExportError',
      `The default export of ${file} is an anonymous function, so the agent has no identity. ` +
        'Name it (`export default function Triage() {}`) or export a named function.',
      { file, exportName: 'default' },
    );
  }
}

export class DuplicateAgentExportError extends FlueBuildError {
  readonly exportNames: string[];

  constructor(file: string, localName: string, exportNames: string[]) {
    super(
      'DuplicateAgentExportError',
      `${file} exports the function ${localName} under several agent names ` +
        `(${exportNames.join(', ')}). One function is one agent: export it once.`,
      { file, exportName: exportNames[0] },
    );
    this.exportNames = exportNames;
  }
}

/** `file:line` when the line is known (an editor opens it there). */
function at(file: string, line: number | undefined): string {
  return line === undefined ? file : `${file}:${line}`;
}

export class InvalidAgentNameStaticError extends FlueBuildError {
  constructor(file: string, exportName: string, localName: string, problem: string, line?: number) {
    super(
      'InvalidAgentNameStaticError',
      `${localName}.agentName in ${at(file, line)} (agent export ${exportName}) is not statically readable: ` +
        `${problem}. Assign a string literal once at module top level, e.g. ` +
        `\`${localName}.agentName = 'issue-triage'\`.`,
      { file, exportName },
    );
  }
}

export class InvalidAgentIdentityError extends FlueBuildError {
  readonly identity: string;

  constructor(file: string, exportName: string, identity: string, source: string, pattern: RegExp, line?: number) {
    super(
      'InvalidAgentIdentityError',
      `Invalid agent identity ${JSON.stringify(identity)} (${source}) for export ${exportName} in ` +
        `${at(file, line)}: it must match ${pattern} (PascalCase or kebab-case, starting with a letter).`,
      { file, exportName },
    );
    this.identity = identity;
  }
}

export class DuplicateAgentIdentityError extends FlueBuildError {
  readonly identity: string;

  constructor(identity: string, occurrences: AgentLocation[]) {
    super(
      'DuplicateAgentIdentityError',
      `Two agents share the identity ${JSON.stringify(identity)}: ${describeAll(occurrences)}. ` +
        'Identities key Durable Object storage and must be unique; rename one or set a distinct `agentName`.',
      occurrences[0] ?? {},
    );
    this.identity = identity;
  }
}

export class AgentIdentifierCollisionError extends FlueBuildError {
  readonly generatedName: string;

  constructor(kind: 'class' | 'binding', generatedName: string, occurrences: IdentityOccurrence[]) {
    const what = kind === 'class' ? 'Durable Object class name' : 'Durable Object binding name';
    const list = occurrences.map((o) => `${JSON.stringify(o.identity)}${where(o)}`).join(' and ');
    super(
      'AgentIdentifierCollisionError',
      `Agent identities ${list} both map to the ${what} ${generatedName}. ` + 'Rename one of them (or set a distinct `agentName`).',
      occurrences[0] ?? {},
    );
    this.generatedName = generatedName;
  }
}

/**
 * A module writes `'use agent'` and exports agent-shaped functions, but the string is not in the
 * directive prologue, so the module would silently not register. Building on would drop its agents
 * from the Worker (their Durable Object classes vanish), which is never what the author meant.
 */
export class MisplacedUseAgentDirectiveError extends FlueBuildError {
  constructor(file: string, exportNames: string[]) {
    super(
      'MisplacedUseAgentDirectiveError',
      `${file} contains 'use agent', but not as the module's first statement, so ${listNames(exportNames)} ` +
        `would not be registered as ${exportNames.length === 1 ? 'an agent' : 'agents'}. Move 'use agent'; to the very top of the file, ` +
        'before every import and other statement (comments may precede it), written exactly as a plain string ' +
        '(\'use agent\' or "use agent", no escapes, parentheses or type casts).',
      { file, exportName: exportNames[0] },
    );
  }
}

/**
 * A module under `src/agents/` exports capitalized functions but has no `'use agent'` directive.
 * The convention puts agents there, so the likely cause is a forgotten directive; without this
 * error the build succeeds and the agents are simply missing at run time.
 */
export class MissingUseAgentDirectiveError extends FlueBuildError {
  constructor(file: string, exportNames: string[]) {
    super(
      'MissingUseAgentDirectiveError',
      `${file} exports ${listNames(exportNames)} from src/agents/ but does not start with 'use agent', so ` +
        `${exportNames.length === 1 ? 'it is' : 'they are'} not registered as ${exportNames.length === 1 ? 'an agent' : 'agents'}. ` +
        "Add 'use agent'; as the first statement of the file. If the module holds no agents, move it out of src/agents/.",
      { file, exportName: exportNames[0] },
    );
  }
}

/** An agent export is an `async` function: agent functions must render synchronously (seed 004). */
export class AsyncAgentExportError extends FlueBuildError {
  constructor(file: string, exportName: string) {
    super(
      'AsyncAgentExportError',
      `Agent functions must be synchronous: export ${exportName} in ${file} is async. An agent function renders ` +
        'before every model call; remove `async` and move awaited work into a tool run(), useAgentStart() or another callback.',
      { file, exportName },
    );
  }
}

export class AgentModuleParseError extends FlueBuildError {
  constructor(file: string, detail: string, cause?: unknown) {
    super('AgentModuleParseError', `Cannot parse ${file}, which mentions 'use agent': ${detail}`, { file }, cause);
  }
}

function where(location: AgentLocation): string {
  if (location.file === undefined) return '';
  return location.exportName === undefined ? ` (${location.file})` : ` (export ${location.exportName} in ${location.file})`;
}

function describeAll(occurrences: AgentLocation[]): string {
  const described = occurrences.map((o) => where(o).slice(2, -1)).filter((s) => s !== '');
  return described.length > 0 ? described.join(' and ') : 'the same identity is listed twice';
}

function listNames(names: string[]): string {
  const shown = names.slice(0, 5).join(', ');
  return names.length > 5 ? `${shown}, …` : shown;
}
