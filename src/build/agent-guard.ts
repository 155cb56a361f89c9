/**
 * The re-entrancy guard of built agent modules. An agent function that calls another agent
 * function directly (`Inner()` in `Outer`'s body) would otherwise render `Inner`'s hooks into
 * `Outer`'s frame without a word: a plain call never passes through the runtime. So the build puts
 * `__flue_enter__();` at the top of every agent function's body; the runtime lets the first entry
 * of a render through and throws `[flue] Re-entrant agent render.` at a second one.
 *
 * Works on esbuild's JavaScript for the module (TS erased), located with acorn like the scan, and
 * keeps an inline source map so errors and stacks still point at the user's `src/` lines: the
 * inserted text never adds a line.
 */
import path from 'node:path';
import { parse, type Program } from 'acorn';
import { transform, type Loader } from 'esbuild';
import { type FunctionNode, ownExports } from './module-exports.ts';

/** The local name the binding footer imports `__flueEnterAgent` under. */
export const ENTER_AGENT_LOCAL = '__flue_enter__';

/** The module as JavaScript, each listed agent export's body entered through the guard. */
export async function guardAgentModule(file: string, source: string, exportNames: readonly string[]): Promise<string> {
  const { code } = await transform(source, {
    loader: loaderFor(file),
    sourcefile: path.basename(file),
    sourcemap: 'inline',
    // As the scan transforms: module syntax kept as written, the bundle's target.
    target: 'es2022',
    logLevel: 'silent',
  });
  const program = parse(code, { ecmaVersion: 'latest', sourceType: 'module' });
  const wanted = new Set(exportNames);
  const edits: { at: number; text: string }[] = [];
  for (const fn of agentFunctions(program, wanted)) {
    if (fn.body.type === 'BlockStatement') edits.push({ at: fn.body.start + 1, text: `${ENTER_AGENT_LOCAL}();` });
    else edits.push({ at: fn.body.start, text: `(${ENTER_AGENT_LOCAL}(), ` }, { at: fn.body.end, text: ')' });
  }
  edits.sort((a, b) => b.at - a.at);
  let guarded = code;
  for (const { at, text } of edits) guarded = guarded.slice(0, at) + text + guarded.slice(at);
  return guarded;
}

/** The function nodes exported under `wanted` names (`default` included), as the scan finds agents. */
function agentFunctions(program: Program, wanted: ReadonlySet<string>): FunctionNode[] {
  const locals = new Map<string, FunctionNode>();
  for (const item of program.body) {
    const statement =
      (item.type === 'ExportNamedDeclaration' || item.type === 'ExportDefaultDeclaration') && item.declaration ? item.declaration : item;
    if (statement.type === 'FunctionDeclaration' && statement.id) locals.set(statement.id.name, statement);
    if (statement.type === 'VariableDeclaration') {
      for (const declarator of statement.declarations) {
        const init = declarator.init;
        if (declarator.id.type === 'Identifier' && (init?.type === 'FunctionExpression' || init?.type === 'ArrowFunctionExpression')) {
          locals.set(declarator.id.name, init);
        }
      }
    }
  }
  const found = new Set<FunctionNode>();
  for (const entry of ownExports(program)) {
    if (!wanted.has(entry.exportName)) continue;
    const node = entry.kind === 'inline' ? entry.node : locals.get(entry.localName);
    if (node !== undefined) found.add(node);
  }
  return [...found];
}

function loaderFor(file: string): Loader {
  return /\.[cm]?ts$/.test(file) ? 'ts' : 'js';
}
