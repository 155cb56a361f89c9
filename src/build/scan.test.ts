import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentIdentifierCollisionError,
  AgentModuleParseError,
  AnonymousAgentExportError,
  DuplicateAgentExportError,
  DuplicateAgentIdentityError,
  FlueBuildError,
  InvalidAgentIdentityError,
  InvalidAgentNameStaticError,
  MisplacedUseAgentDirectiveError,
  MissingUseAgentDirectiveError,
  AsyncAgentExportError,
  NoAgentExportsError,
} from './build-errors.ts';
import { readDirectivePrologue } from './scan-prologue.ts';
import { scanAgents, scanModule } from './scan.ts';

const FILE = '/project/src/agents/triage.ts';

/** `[exportName, identity]` pairs of a module, or `undefined` when it is not an agent module. */
async function agentsOf(source: string, file = FILE): Promise<[string, string][] | undefined> {
  const module = await scanModule(file, source);
  return module?.agents.map((agent) => [agent.exportName, agent.identity]);
}

async function scanError(source: string, file = FILE): Promise<FlueBuildError> {
  try {
    await scanModule(file, source);
  } catch (error) {
    expect(error).toBeInstanceOf(FlueBuildError);
    return error as FlueBuildError;
  }
  throw new Error('expected the scan to fail');
}

describe('directive prologue', () => {
  it('marks a module whose first statement is the directive', async () => {
    expect(await agentsOf(`'use agent';\nexport function Triage() {}\n`)).toEqual([['Triage', 'Triage']]);
  });

  it('accepts a shebang, comments and other directives before it', async () => {
    const source = `#!/usr/bin/env node
// leading line comment
/* block
   comment */
'use strict';
/** doc */ "use client"
'use agent';
import { helper } from './helper.ts';
export function Triage(): void { helper(); }
`;
    expect(await agentsOf(source)).toEqual([['Triage', 'Triage']]);
  });

  it('accepts double quotes', async () => {
    expect(await agentsOf(`"use agent"\nexport function Triage() {}\n`)).toEqual([['Triage', 'Triage']]);
  });

  it('accepts a directive ended by ASI before TS-only syntax', async () => {
    expect(await agentsOf(`'use agent'\ninterface Props { id: string }\nexport function Triage(p: Props) {}\n`)).toEqual([
      ['Triage', 'Triage'],
    ]);
    expect(await agentsOf(`'use agent'\nimport type { X } from './x.ts';\nexport function Triage(x: X) {}\n`)).toEqual([
      ['Triage', 'Triage'],
    ]);
  });

  // A module that exports agent-shaped functions and writes 'use agent' as a top-level statement
  // outside the prologue meant to be an agent module: building on would silently drop its agents.
  it.each([
    ['after an import', `import { x } from './x.ts';\n'use agent';\nexport function Triage() { return x; }\n`],
    ['after a type-only import (erased by esbuild)', `import type { X } from './x.ts';\n'use agent';\nexport function Triage(x?: X) {}\n`],
    ['after a type alias (erased by esbuild)', `type T = string;\n'use agent';\nexport function Triage(t?: T) {}\n`],
    ['after another statement', `const x = 1;\n'use agent';\nexport function Triage() { return x; }\n`],
    ['with an escape sequence and a mention elsewhere', `'use\\x20agent';\n// use agent\nexport function Triage() {}\n`],
    ['with a unicode escape', `'use\\u0020agent';\n// use agent\nexport function Triage() {}\n`],
    ['parenthesized', `('use agent');\nexport function Triage() {}\n`],
    ['with a TS non-null assertion', `'use agent'!;\nexport function Triage() {}\n`],
    ['with a TS as-expression', `'use agent' as string;\nexport function Triage() {}\n`],
  ])('MisplacedUseAgentDirectiveError: the directive %s', async (_, source) => {
    const error = await scanError(source);
    expect(error).toBeInstanceOf(MisplacedUseAgentDirectiveError);
    expect(error.message).toBe(
      `[flue] ${FILE} contains 'use agent', but not as the module's first statement, so Triage would not be registered as an agent. ` +
        "Move 'use agent'; to the very top of the file, before every import and other statement (comments may precede it), " +
        'written exactly as a plain string (\'use agent\' or "use agent", no escapes, parentheses or type casts).',
    );
  });

  it('a misplaced directive in a module without agent-shaped exports is not an error', async () => {
    expect(await scanModule(FILE, `import { x } from './x.ts';\n'use agent';\nexport const helper = () => x;\n`)).toBeUndefined();
  });

  it.each([
    ['inside a function', `export function Triage() {\n  'use agent';\n}\n`],
    ['with a trailing space', `'use agent ';\nexport function Triage() {}\n`],
    ['as a template literal', '`use agent`;\nexport function Triage() {}\n'],
    ['continued on the next line', `'use agent'\n.trim();\nexport function Triage() {}\n`],
    ['continued by a regex-looking division', `'use agent'\n/agent/g.test('x')\nexport function Triage() {}\n`],
    ['only in a comment', `// 'use agent'\nexport function Triage() {}\n`],
    ['only in a string elsewhere', `export const note = 'use agent';\nexport function Triage() {}\n`],
  ])('does not mark a module with the directive %s', async (_, source) => {
    expect(await scanModule(FILE, source)).toBeUndefined();
  });

  it('MissingUseAgentDirectiveError: a src/agents/ module exporting capitalized functions without the directive', async () => {
    const source = `import { useModel } from '@flue/runtime';\nexport function Triage() { useModel('anthropic/claude-haiku-4-5'); }\nexport const Helper = () => {};\nexport function lower() {}\n`;
    // Outside the src/agents/ convention the module is simply not an agent module.
    expect(await scanModule(FILE, source)).toBeUndefined();
    let thrown: unknown;
    try {
      await scanModule(FILE, source, { agentsDir: true });
    } catch (caught) {
      thrown = caught;
    }
    expect(thrown).toBeInstanceOf(MissingUseAgentDirectiveError);
    expect((thrown as Error).message).toBe(
      `[flue] ${FILE} exports Triage, Helper from src/agents/ but does not start with 'use agent', so they are not registered as agents. ` +
        "Add 'use agent'; as the first statement of the file. If the module holds no agents, move it out of src/agents/.",
    );
    // A directive only inside a function counts as missing, too.
    await expect(scanModule(FILE, `export function Triage() {\n  'use agent';\n}\n`, { agentsDir: true })).rejects.toBeInstanceOf(
      MissingUseAgentDirectiveError,
    );
    // Lower-case helpers, types and broken files in src/agents/ stay the bundler's business.
    expect(await scanModule(FILE, `export function helper() {}\nexport type T = string;\n`, { agentsDir: true })).toBeUndefined();
    expect(await scanModule(FILE, 'export function (((', { agentsDir: true })).toBeUndefined();
  });

  it('skips files without the text at all, even if they do not parse', async () => {
    expect(await scanModule(FILE, 'export function (((')).toBeUndefined();
  });

  it('reads the raw directive texts of the prologue', () => {
    expect(readDirectivePrologue(`#!/bin/x\n'use strict'; "use agent"\n'a' + 'b';\n'not';`)).toEqual(["'use strict'", '"use agent"']);
    expect(readDirectivePrologue(`'use agent'; @decorator class X {}`)).toEqual(["'use agent'"]);
    expect(readDirectivePrologue(`'use agent' @decorator class X {}`)).toEqual([]);
    expect(readDirectivePrologue(`@decorator class X {}`)).toEqual([]);
  });
});

describe('recognized export forms (build-and-cli.md §1.2)', () => {
  it.each([
    ['export function', `export function Triage(input: string): string { return input; }`],
    ['export const arrow', `export const Triage = (props: { id: string }) => {};`],
    ['export const function expression', `export const Triage = function () {};`],
    ['export const named function expression', `export const Triage = function inner() {};`],
    ['export const through as', `export const Triage = (() => {}) as unknown as Agent;`],
    ['export const through satisfies', `export const Triage = (() => {}) satisfies Agent;`],
    ['export const through non-null', `export const Triage = (() => {})!;`],
    ['export const through parentheses', `export const Triage = ((() => {}));`],
    ['export const with a type annotation', `export const Triage: Agent = () => {};`],
    ['export const through an angle-bracket assertion', `export const Triage = <Agent>(() => {});`],
    ['a local function exported under an alias', `function helper() {}\nexport { helper as Triage };`],
    ['a local arrow exported by name', `const Triage = () => {};\nexport { Triage };`],
    ['TS overloads', `export function Triage(a: string): void;\nexport function Triage(a: unknown) {}`],
  ])('%s', async (_, body) => {
    const source = `'use agent';\ntype Agent = (...args: any[]) => unknown;\n${body}\n`;
    expect(await agentsOf(source)).toEqual([['Triage', 'Triage']]);
  });

  it.each([
    ['export default function Name', `export default function Triage() {}`],
    ['export default <local function>', `function Triage() {}\nexport default Triage;`],
    ['export default <local arrow>', `const Triage = () => {};\nexport default Triage;`],
    ['export default <local> through as', `const Triage = () => {};\nexport default Triage as unknown;`],
    ['export { Name as default }', `function Triage() {}\nexport { Triage as default };`],
    ['export default (function Name() {})', `export default (function Triage() {});`],
  ])('%s → default export, identity from the function name', async (_, body) => {
    expect(await agentsOf(`'use agent';\n${body}\n`)).toEqual([['default', 'Triage']]);
  });

  it('exposes class and binding names and an absolute file path', async () => {
    const module = await scanModule('src/agents/support.ts', `'use agent';\nexport function SupportChat() {}\n`);
    expect(module).toEqual({
      file: path.resolve('src/agents/support.ts'),
      agents: [
        {
          exportName: 'SupportChat',
          identity: 'SupportChat',
          className: 'FlueSupportChatAgent',
          bindingName: 'FLUE_SUPPORT_CHAT_AGENT',
        },
      ],
    });
  });

  it('keeps source order across export forms', async () => {
    const source = `'use agent';
function helper() {}
export const Zeta = () => {};
export default function Alpha() {}
export function Mid() {}
export { helper as Beta };
`;
    expect(await agentsOf(source)).toEqual([
      ['Zeta', 'Zeta'],
      ['default', 'Alpha'],
      ['Mid', 'Mid'],
      ['Beta', 'Beta'],
    ]);
  });

  it('works on .js and .mjs modules', async () => {
    const source = `'use agent';\nexport const Triage = () => {};\n`;
    expect(await agentsOf(source, '/project/src/a.js')).toEqual([['Triage', 'Triage']]);
    expect(await agentsOf(source, '/project/src/a.mjs')).toEqual([['Triage', 'Triage']]);
  });
});

describe('exports that are never agents', () => {
  // Each module also defines one real agent so it is not a NoAgentExportsError.
  const withAgent = (body: string) => `'use agent';\nexport function Real() {}\n${body}\n`;

  it.each([
    ['lowercase function', `export function helper() {}`],
    ['lowercase const arrow', `export const helper = () => {};`],
    ['lowercase alias of a function', `function Triage() {}\nexport { Triage as triage };`],
    ['lowercase default function', `export default function helper() {}`],
    ['lowercase default local', `const helper = () => {};\nexport default helper;`],
    ['non-ASCII capital', `export function Ärger() {}`],
    ['class', `export class Triage {}`],
    ['default class', `export default class Triage {}`],
    ['anonymous default class', `export default class {}`],
    ['class exported by alias', `class K {}\nexport { K as Triage };`],
    ['re-export', `export { Triage } from './other.ts';`],
    ['renamed re-export', `export { default as Triage } from './other.ts';`],
    ['star re-export', `export * from './other.ts';`],
    ['namespace re-export', `export * as Triage from './other.ts';`],
    ['imported binding re-exported', `import { Triage } from './other.ts';\nexport { Triage };`],
    ['imported binding as default', `import Triage from './other.ts';\nexport default Triage;`],
    ['object value', `export const Triage = { run() {} };`],
    ['call result', `declare function make(): () => void;\nexport const Triage = make();`],
    ['number', `export const Triage = 1;`],
    ['string', `export const Triage = 'x';`],
    ['destructured binding', `const fns = { a() {} };\nexport const { a: Triage } = fns;`],
    ['alias of another binding', `function f() {}\nconst Alias = f;\nexport { Alias as Triage };`],
    ['TS enum', `export enum Triage { A }`],
    ['TS namespace', `export namespace Triage { export const x = 1; }`],
    ['TS type and interface', `export type Triage = () => void;\nexport interface Other {}`],
    ['TS declare function', `export declare function Triage(): void;`],
    ['default expression that is not a function', `export default { Triage() {} };`],
  ])('%s', async (_, body) => {
    expect(await agentsOf(withAgent(body))).toEqual([['Real', 'Real']]);
  });
});

describe('agentName static', () => {
  it.each([
    ['single quotes', `export function Triage() {}\nTriage.agentName = 'issue-triage';`],
    ['double quotes', `export function Triage() {}\nTriage.agentName = "issue-triage";`],
    ['template without substitutions', 'export function Triage() {}\nTriage.agentName = `issue-triage`;'],
    ['before the declaration', `Triage.agentName = 'issue-triage';\nexport function Triage() {}`],
    ['through a TS as-wrapper', `export function Triage() {}\n(Triage as any).agentName = 'issue-triage';`],
    ['through a TS non-null wrapper', `export function Triage() {}\nTriage!.agentName = 'issue-triage';`],
    ['computed literal key', `export function Triage() {}\nTriage['agentName'] = 'issue-triage';`],
    ['on an aliased export', `function helper() {}\nhelper.agentName = 'issue-triage';\nexport { helper as Triage };`],
    ['on a const arrow', `export const Triage = () => {};\nTriage.agentName = 'issue-triage';`],
    // esbuild folds constant string concatenation, so the build sees a literal.
    ['constant concatenation', `export function Triage() {}\nTriage.agentName = 'issue-' + 'triage';`],
  ])('overrides the identity: %s', async (_, body) => {
    const module = await scanModule(FILE, `'use agent';\n${body}\n`);
    expect(module?.agents).toEqual([
      {
        exportName: 'Triage',
        identity: 'issue-triage',
        className: 'FlueIssueTriageAgent',
        bindingName: 'FLUE_ISSUE_TRIAGE_AGENT',
      },
    ]);
  });

  it('overrides a default export identity', async () => {
    const source = `'use agent';\nexport default function Triage() {}\nTriage.agentName = 'issue-triage';\n`;
    expect(await agentsOf(source)).toEqual([['default', 'issue-triage']]);
  });

  it('ignores agentName on non-agents and on shadowing locals', async () => {
    const source = `'use agent';
export function helper() {}
helper.agentName = someValue();
export function Triage() {}
function configure(Triage: { agentName?: string }) { Triage.agentName = 'x'; }
{ const Triage = { agentName: '' }; Triage.agentName = String(1); }
export const Other = () => { const Triage = {} as any; Triage.agentName = 'y'; };
`;
    expect(await agentsOf(source)).toEqual([
      ['Triage', 'Triage'],
      ['Other', 'Other'],
    ]);
  });

  it.each([
    ['a variable', `const name = 'x';\nexport function Triage() {}\nTriage.agentName = name;`, /not a string literal/],
    ['a template with a substitution', 'export function Triage() {}\nTriage.agentName = `t-${1}`;', /not a string literal/],
    ['a concatenation', `export function Triage() {}\nTriage.agentName = 'a-' + String(1);`, /not a string literal/],
    [
      'a conditional statement',
      `export function Triage() {}\nif (Math.random()) Triage.agentName = 'x';`,
      /inside a function, block, condition/,
    ],
    ['a conditional value', `export function Triage() {}\nTriage.agentName = Math.random() ? 'a' : 'b';`, /not a string literal/],
    ['a nested block', `export function Triage() {}\n{ Triage.agentName = 'x'; }`, /inside a function, block, condition/],
    [
      'inside a function',
      `export function Triage() {}\nfunction setup() { Triage.agentName = 'x'; }`,
      /inside a function, block, condition/,
    ],
    ['inside the agent itself', `export function Triage() { Triage.agentName = 'x'; }`, /inside a function, block, condition/],
    ['a sequence expression', `export function Triage() {}\nTriage.agentName = 'x', 0;`, /inside a function, block, condition/],
    [
      'a chained assignment',
      `let n: string;\nexport function Triage() {}\nn = Triage.agentName = 'x';`,
      /inside a function, block, condition/,
    ],
    ['a compound operator', `export function Triage() {}\nTriage.agentName += 'x';`, /updated with `\+=`/],
    ['a logical assignment', `export function Triage() {}\nTriage.agentName ??= 'x';`, /updated with `\?\?=`/],
    ['two assignments', `export function Triage() {}\nTriage.agentName = 'a';\nTriage.agentName = 'b';`, /more than once/],
    ['destructuring', `export function Triage() {}\n[Triage.agentName] = ['x'];`, /destructuring/],
    ['delete', `export function Triage() {}\nTriage.agentName = 'a';\ndelete Triage.agentName;`, /changed with `delete`/],
    ['Object.assign', `export function Triage() {}\nObject.assign(Triage, { agentName: 'x' });`, /Object\/Reflect/],
    [
      'Object.defineProperty',
      `export function Triage() {}\nObject.defineProperty(Triage, 'agentName', { value: 'x' });`,
      /Object\/Reflect/,
    ],
    ['Reflect.set', `export function Triage() {}\nReflect.set(Triage, 'agentName', 'x');`, /Object\/Reflect/],
  ])('rejects %s with InvalidAgentNameStaticError', async (_, body, problem) => {
    const error = await scanError(`'use agent';\n${body}\n`);
    expect(error).toBeInstanceOf(InvalidAgentNameStaticError);
    expect(error.name).toBe('InvalidAgentNameStaticError');
    // The line of the offending write: the body's last line (line 1 is the directive).
    const line = 1 + body.split('\n').length;
    expect(error.message).toMatch(
      new RegExp(`^\\[flue\\] Triage\\.agentName in /project/src/agents/triage\\.ts:${line} \\(agent export Triage\\)`),
    );
    expect(error.message).toMatch(problem);
    expect(error.file).toBe(FILE);
    expect(error.exportName).toBe('Triage');
  });
});

describe('build errors', () => {
  it('NoAgentExportsError: a marked module with no agent', async () => {
    const error = await scanError(`'use agent';\nexport function helper() {}\nexport class Triage {}\n`);
    expect(error).toBeInstanceOf(NoAgentExportsError);
    expect(error.message).toMatch(/^\[flue\] \/project\/src\/agents\/triage\.ts is marked 'use agent' but exports no agent/);
  });

  it('NoAgentExportsError: a marked module with no exports at all', async () => {
    expect(await scanError(`'use agent';\nconsole.log(1);\n`)).toBeInstanceOf(NoAgentExportsError);
  });

  it.each([
    ['export async function', `export async function Triage() {}`, 'Triage'],
    ['export const async arrow', `export const Triage = async () => {};`, 'Triage'],
    ['export default async function Name', `export default async function Triage() {}`, 'default'],
  ])('AsyncAgentExportError: %s', async (_, body, exportName) => {
    const error = await scanError(`'use agent';\n${body}\n`);
    expect(error).toBeInstanceOf(AsyncAgentExportError);
    expect(error.exportName).toBe(exportName);
    expect(error.message).toBe(
      `[flue] Agent functions must be synchronous: export ${exportName} in ${FILE} is async. An agent function renders ` +
        'before every model call; remove `async` and move awaited work into a tool run(), useAgentStart() or another callback.',
    );
  });

  it.each([
    ['function', `export default function () {}`],
    ['async function', `export default async function () {}`],
    ['arrow', `export default () => {};`],
    ['async arrow', `export default async (input: string) => {};`],
    ['function expression', `export default (function () {});`],
    ['arrow through satisfies', `export default (() => {}) satisfies unknown;`],
  ])('AnonymousAgentExportError: anonymous default %s', async (_, body) => {
    // A named agent alongside does not excuse the anonymous default.
    const error = await scanError(`'use agent';\nexport function Named() {}\n${body}\n`);
    expect(error).toBeInstanceOf(AnonymousAgentExportError);
    expect(error.message).toMatch(/^\[flue\] The default export of \/project\/src\/agents\/triage\.ts is an anonymous function/);
    expect(error.exportName).toBe('default');
  });

  it('anonymous defaults are not agent errors in unmarked modules', async () => {
    expect(await scanModule(FILE, `// use agent somewhere\nexport default () => {};\n`)).toBeUndefined();
  });

  it.each([
    ['two aliases', `function helper() {}\nexport { helper as Triage, helper as Other };`, ['Triage', 'Other']],
    ['a declaration and an alias', `export function Triage() {}\nexport { Triage as Other };`, ['Triage', 'Other']],
    ['named and default', `export default function Triage() {}\nexport { Triage };`, ['default', 'Triage']],
  ])('DuplicateAgentExportError: %s', async (_, body, names) => {
    const error = await scanError(`'use agent';\n${body}\n`);
    expect(error).toBeInstanceOf(DuplicateAgentExportError);
    expect((error as DuplicateAgentExportError).exportNames).toEqual(names);
    expect(error.message).toContain(`(${names.join(', ')})`);
  });

  it('one function under one agent name and helper names is fine', async () => {
    const source = `'use agent';\nexport function Triage() {}\nexport { Triage as triage, Triage as default2 };\n`;
    expect(await agentsOf(source)).toEqual([['Triage', 'Triage']]);
  });

  it.each([
    ['an invalid agentName', `export function Triage() {}\nTriage.agentName = 'issue triage';`, 'issue triage', 'agentName static'],
    ['a leading digit', `export function Triage() {}\nTriage.agentName = '2fast';`, '2fast', 'agentName static'],
    ['an empty segment', `export function Triage() {}\nTriage.agentName = 'a--b';`, 'a--b', 'agentName static'],
    ['an underscore in the export name', `export function Tri_age() {}`, 'Tri_age', 'export name'],
    ['a dollar in the function name', `export default function Tri$age() {}`, 'Tri$age', 'function name'],
  ])('InvalidAgentIdentityError: %s', async (_, body, identity, source) => {
    const error = await scanError(`'use agent';\n${body}\n`);
    expect(error).toBeInstanceOf(InvalidAgentIdentityError);
    expect((error as InvalidAgentIdentityError).identity).toBe(identity);
    expect(error.message).toContain(`${JSON.stringify(identity)} (${source})`);
    expect(error.message).toContain(`/project/src/agents/triage.ts:${1 + body.split('\n').length}: it must match`);
  });

  it('DuplicateAgentIdentityError: two agents of one module share an identity', async () => {
    const source = `'use agent';
export function Triage() {}
export function Other() {}
Other.agentName = 'Triage';
`;
    const error = await scanError(source);
    expect(error).toBeInstanceOf(DuplicateAgentIdentityError);
    expect(error.message).toMatch(/export Triage in .* and export Other in/);
  });

  it('AgentIdentifierCollisionError: two agents of one module fold to one class', async () => {
    const source = `'use agent';\nexport function SupportChat() {}\nexport function Other() {}\nOther.agentName = 'support-chat';\n`;
    expect(await scanError(source)).toBeInstanceOf(AgentIdentifierCollisionError);
  });

  it.each([
    ['a TS syntax error', `'use agent';\nexport function Triage( {}\n`],
    ['an unterminated string', `'use agent';\nexport const Triage = 'x\n`],
    ['a mention in a broken unmarked file', `// use agent later\nexport const = ;\n`],
  ])('AgentModuleParseError: %s (a candidate that does not parse is not skipped)', async (_, source) => {
    const error = await scanError(source);
    expect(error).toBeInstanceOf(AgentModuleParseError);
    expect(error.message).toMatch(/^\[flue\] Cannot parse \/project\/src\/agents\/triage\.ts, which mentions 'use agent': \d+:\d+: /);
  });

  it('build errors are stackless-friendly', async () => {
    const error = await scanError(`'use agent';\nexport function helper() {}\n`);
    expect(error.stack).toBe(`NoAgentExportsError: ${error.message}`);
  });
});

describe('scanAgents over a project tree', () => {
  let root: string;

  const write = async (relative: string, contents: string): Promise<void> => {
    const file = path.join(root, relative);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, contents);
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flue-scan-'));
    // Written out of path order on purpose.
    await write('src/nested/deep/zed.ts', `'use agent';\nexport function Zed() {}\n`);
    await write(
      'src/agents/support.ts',
      `'use agent';\nexport const SupportChat = () => {};\nexport default function Triage() {}\nTriage.agentName = 'issue-triage';\n`,
    );
    await write('src/agents/Beta.mts', `"use agent"\nexport function Beta(): void {}\n`);
    await write('src/app.ts', `export default { fetch() { return new Response('ok'); } };\n`);
    await write('src/tools/plain.js', `'use agent';\nexport function PlainJs() {}\n`);
    await write('src/tools/plain.mjs', `'use agent';\nexport function PlainMjs() {}\n`);
    await write('src/mentions.ts', `// this file talks about 'use agent' but is not one\nexport function NotAnAgent() {}\n`);
    // Excluded: dependencies, build output, wrangler state, dot-dirs, unscanned extensions.
    const broken = `'use agent';\nexport function Broken( {\n`;
    await write('src/node_modules/pkg/index.ts', broken);
    await write('src/dist/out.js', broken);
    await write('src/.wrangler/tmp/x.ts', broken);
    await write('src/.cache/x.ts', broken);
    await write('src/agents/view.tsx', broken);
    await write('src/types.d.ts', `'use agent';\nexport declare function Declared(): void;\n`);
    await write('outside.ts', broken); // not under src/
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('finds agent modules sorted by path, agents in source order', async () => {
    const result = await scanAgents({ root });
    expect(result.modules.map((m) => path.relative(root, m.file))).toEqual([
      'src/agents/Beta.mts',
      'src/agents/support.ts',
      'src/nested/deep/zed.ts',
      'src/tools/plain.js',
      'src/tools/plain.mjs',
    ]);
    expect(result.modules.every((m) => path.isAbsolute(m.file))).toBe(true);
    expect(result.modules[1]!.agents).toEqual([
      { exportName: 'SupportChat', identity: 'SupportChat', className: 'FlueSupportChatAgent', bindingName: 'FLUE_SUPPORT_CHAT_AGENT' },
      { exportName: 'default', identity: 'issue-triage', className: 'FlueIssueTriageAgent', bindingName: 'FLUE_ISSUE_TRIAGE_AGENT' },
    ]);
  });

  it('is deterministic', async () => {
    const first = await scanAgents({ root });
    const second = await scanAgents({ root });
    expect(second).toEqual(first);
  });

  it('scans only the given files when a list is passed (relative or absolute)', async () => {
    const result = await scanAgents({
      root,
      files: ['src/tools/plain.js', path.join(root, 'src/agents/Beta.mts'), 'src/app.ts', 'src/agents/Beta.mts'],
    });
    expect(result.modules.map((m) => path.relative(root, m.file))).toEqual(['src/agents/Beta.mts', 'src/tools/plain.js']);
  });

  it('applies the src/agents/ convention on the default walk only', async () => {
    const project = await mkdtemp(path.join(tmpdir(), 'flue-scan-conv-'));
    try {
      await mkdir(path.join(project, 'src/agents'), { recursive: true });
      await mkdir(path.join(project, 'src/lib'), { recursive: true });
      await writeFile(path.join(project, 'src/agents/support.ts'), `export function Support() {}\n`);
      await writeFile(path.join(project, 'src/lib/ui.ts'), `export function Button() {}\n`);
      await expect(scanAgents({ root: project })).rejects.toBeInstanceOf(MissingUseAgentDirectiveError);
      // A config `agents` glob names its files itself; outside src/agents/ nothing is assumed.
      expect(await scanAgents({ root: project, files: ['src/agents/support.ts'] })).toEqual({ modules: [] });
      await writeFile(path.join(project, 'src/agents/support.ts'), `'use agent';\nexport function Support() {}\n`);
      expect((await scanAgents({ root: project })).modules).toHaveLength(1);
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  });

  it('returns no modules for a project without src/', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'flue-scan-empty-'));
    try {
      expect(await scanAgents({ root: empty })).toEqual({ modules: [] });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('fails on a broken candidate that is not excluded', async () => {
    await expect(scanAgents({ root, files: ['src/tools/plain.js', 'src/node_modules/pkg/index.ts'] })).rejects.toBeInstanceOf(
      AgentModuleParseError,
    );
  });

  describe('across modules', () => {
    let other: string;
    beforeAll(async () => {
      other = await mkdtemp(path.join(tmpdir(), 'flue-scan-x-'));
    });
    afterAll(async () => {
      await rm(other, { recursive: true, force: true });
    });

    const project = async (name: string, files: Record<string, string>): Promise<string> => {
      const dir = path.join(other, name);
      for (const [relative, contents] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, relative)), { recursive: true });
        await writeFile(path.join(dir, relative), contents);
      }
      return dir;
    };

    it('DuplicateAgentIdentityError names both modules', async () => {
      const dir = await project('dup', {
        'src/a.ts': `'use agent';\nexport function Triage() {}\n`,
        'src/b.ts': `'use agent';\nexport function Other() {}\nOther.agentName = 'Triage';\n`,
      });
      const error = await scanAgents({ root: dir }).catch((e: unknown) => e as Error);
      expect(error).toBeInstanceOf(DuplicateAgentIdentityError);
      expect((error as Error).message).toBe(
        `[flue] Two agents share the identity "Triage": export Triage in ${path.join(dir, 'src/a.ts')} and ` +
          `export Other in ${path.join(dir, 'src/b.ts')}. Identities key Durable Object storage and must be ` +
          'unique; rename one or set a distinct `agentName`.',
      );
    });

    it('AgentIdentifierCollisionError for kebab/Pascal twins', async () => {
      const dir = await project('twins', {
        'src/a.ts': `'use agent';\nexport function SupportChat() {}\n`,
        'src/b.ts': `'use agent';\nexport function Chat() {}\nChat.agentName = 'support-chat';\n`,
      });
      await expect(scanAgents({ root: dir })).rejects.toThrow(AgentIdentifierCollisionError);
    });

    it('AgentIdentifierCollisionError for a binding-only collision (AB / Ab)', async () => {
      const dir = await project('ab', {
        'src/a.ts': `'use agent';\nexport function AB() {}\n`,
        'src/b.ts': `'use agent';\nexport function Ab() {}\n`,
      });
      await expect(scanAgents({ root: dir })).rejects.toThrow(/binding name FLUE_AB_AGENT/);
    });

    it('reports the first failing module in path order', async () => {
      const dir = await project('order', {
        'src/z.ts': `'use agent';\nexport function helper() {}\n`,
        'src/a.ts': `'use agent';\nexport default () => {};\n`,
      });
      await expect(scanAgents({ root: dir })).rejects.toBeInstanceOf(AnonymousAgentExportError);
    });
  });
});
