/**
 * A module's own exports, as acorn reads esbuild's output of it: what the scan walks to find
 * agents (and the agent-shaped exports of an unmarked module), and what the re-entrancy guard
 * walks to find their bodies. Re-exports (`export … from '…'`, `export *`) are not the module's
 * own: an agent registers where it is defined.
 */
import type { AnyNode, Program } from 'acorn';

export type FunctionNode = Extract<AnyNode, { type: 'FunctionDeclaration' | 'FunctionExpression' | 'ArrowFunctionExpression' }>;

export type OwnExport =
  /**
   * A module-scope binding exported: `export function F`, `export const F = …`,
   * `export { f as F }`, `export default F`, `export default function F() {}`.
   */
  | { kind: 'binding'; exportName: string; localName: string; position: number }
  /** A default-exported function with no module binding: `export default () => …`, `export default (function F() {})`. */
  | { kind: 'inline'; exportName: 'default'; node: FunctionNode; position: number };

export function ownExports(program: Program): OwnExport[] {
  const out: OwnExport[] = [];
  const binding = (exportName: string, localName: string, position: number) =>
    out.push({ kind: 'binding', exportName, localName, position });
  for (const statement of program.body) {
    if (statement.type === 'ExportNamedDeclaration') {
      if (statement.source) continue;
      const declaration = statement.declaration;
      if (declaration?.type === 'FunctionDeclaration') binding(declaration.id.name, declaration.id.name, declaration.start);
      else if (declaration?.type === 'VariableDeclaration') {
        for (const declarator of declaration.declarations) {
          if (declarator.id.type === 'Identifier') binding(declarator.id.name, declarator.id.name, declarator.start);
        }
      } else if (declaration == null) {
        for (const specifier of statement.specifiers) binding(exportName(specifier.exported), exportName(specifier.local), specifier.start);
      }
    } else if (statement.type === 'ExportDefaultDeclaration') {
      const declaration = statement.declaration;
      if (declaration.type === 'FunctionDeclaration' && declaration.id) binding('default', declaration.id.name, statement.start);
      else if (
        declaration.type === 'FunctionDeclaration' ||
        declaration.type === 'FunctionExpression' ||
        declaration.type === 'ArrowFunctionExpression'
      ) {
        out.push({ kind: 'inline', exportName: 'default', node: declaration, position: statement.start });
      } else if (declaration.type === 'Identifier') binding('default', declaration.name, statement.start);
    }
  }
  return out;
}

/** An export specifier's name: an identifier, or a string literal (`export { x as "a-b" }`). */
function exportName(node: { type: string; name?: string; value?: unknown }): string {
  return node.type === 'Identifier' ? node.name! : String(node.value);
}
