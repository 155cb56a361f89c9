/**
 * `agentName` statics, read from esbuild's output of an agent module (build-and-cli.md §1.3), and
 * the scope tracking they need: only precise enough to tell a module binding from a local of the
 * same name.
 */
import type { AnyNode, Expression, Pattern, Program } from 'acorn';
import { childNodes } from './ast-nodes.ts';

export interface AgentNameWrite {
  /** Offset of the writing expression in the scanned (esbuild output) text. */
  start: number;
  /** The literal value of the one statically readable form. */
  value?: string;
  /** Why this write is not statically readable. */
  problem?: string;
}

/**
 * Every write to `<agent>.agentName` in the module, keyed by the agent's local name. Only
 * `X.agentName = '<literal>'` as a whole module-level statement is readable; esbuild has already
 * removed TS wrappers (`(X as any).agentName`, `X!.agentName`). References shadowed by a local
 * binding of the same name are not the agent and are ignored.
 */
export function findAgentNameWrites(program: Program, agentLocals: Set<string>): Map<string, AgentNameWrite[]> {
  const writes = new Map<string, AgentNameWrite[]>();
  if (agentLocals.size === 0) return writes;

  const topLevelAssignments = new Set<AnyNode>();
  for (const statement of program.body) {
    if (statement.type === 'ExpressionStatement' && statement.expression.type === 'AssignmentExpression') {
      topLevelAssignments.add(statement.expression);
    }
  }

  const record = (name: string, node: AnyNode, write: Omit<AgentNameWrite, 'start'>): void => {
    const list = writes.get(name) ?? [];
    list.push({ start: node.start, ...write });
    writes.set(name, list);
  };
  // The agent a member expression's object names, when that member is `.agentName`.
  const targetOf = (node: AnyNode, scopes: Set<string>[]): string | undefined => {
    if (node.type !== 'MemberExpression' || node.object.type !== 'Identifier') return undefined;
    const name = node.object.name;
    if (!agentLocals.has(name) || isShadowed(name, scopes)) return undefined;
    const key = node.computed ? staticString(node.property as Expression) : (node.property as { name?: string }).name;
    return key === 'agentName' ? name : undefined;
  };
  const agentArgument = (node: AnyNode | undefined, scopes: Set<string>[]): string | undefined =>
    node?.type === 'Identifier' && agentLocals.has(node.name) && !isShadowed(node.name, scopes) ? node.name : undefined;

  const visit = (node: AnyNode, scopes: Set<string>[]): void => {
    const inner = scopeIntroducedBy(node);
    const current = inner === undefined ? scopes : [...scopes, inner];

    switch (node.type) {
      case 'AssignmentExpression': {
        const target = targetOf(node.left, current);
        if (target !== undefined) {
          const literal = staticString(node.right);
          if (node.operator !== '=') {
            record(target, node, { problem: `it is updated with \`${node.operator}\`` });
          } else if (!topLevelAssignments.has(node)) {
            record(target, node, { problem: 'it is assigned inside a function, block, condition or larger expression' });
          } else if (literal === undefined) {
            record(target, node, { problem: 'the assigned value is not a string literal' });
          } else {
            record(target, node, { value: literal });
          }
        } else {
          for (const member of patternMembers(node.left)) {
            const name = targetOf(member, current);
            if (name !== undefined) record(name, node, { problem: 'it is assigned by destructuring' });
          }
        }
        break;
      }
      case 'UpdateExpression':
      case 'UnaryExpression': {
        const name = targetOf(node.argument, current);
        if (name !== undefined && (node.type === 'UpdateExpression' || node.operator === 'delete')) {
          record(name, node, { problem: `it is changed with \`${node.operator}\`` });
        }
        break;
      }
      case 'ForInStatement':
      case 'ForOfStatement': {
        const name = targetOf(node.left, current);
        if (name !== undefined) record(name, node, { problem: 'it is a loop variable' });
        break;
      }
      case 'CallExpression': {
        const name = agentArgument(node.arguments[0], current);
        if (name !== undefined && setsAgentNameReflectively(node)) {
          record(name, node, { problem: 'it is set through Object/Reflect property helpers' });
        }
        break;
      }
    }
    for (const child of childNodes(node)) visit(child, current);
  };
  visit(program, []);
  return writes;
}

/** `Object.assign(X, { agentName })`, `Object.defineProperty(X, 'agentName', …)` and kin. */
function setsAgentNameReflectively(call: AnyNode & { type: 'CallExpression' }): boolean {
  const callee = call.callee;
  if (callee.type !== 'MemberExpression' || callee.object.type !== 'Identifier' || callee.computed) return false;
  const receiver = callee.object.name;
  const method = (callee.property as { name?: string }).name;
  const rest = call.arguments.slice(1);
  const hasAgentNameKey = (node: AnyNode | undefined): boolean =>
    node?.type === 'ObjectExpression' &&
    node.properties.some(
      (property) =>
        property.type === 'Property' &&
        (property.computed ? staticString(property.key as Expression) : propertyKeyName(property.key)) === 'agentName',
    );
  if (receiver === 'Object' && (method === 'assign' || method === 'defineProperties')) {
    return rest.some((argument) => hasAgentNameKey(argument));
  }
  if ((receiver === 'Object' || receiver === 'Reflect') && (method === 'defineProperty' || method === 'set')) {
    return rest[0] !== undefined && rest[0].type !== 'SpreadElement' && staticString(rest[0]) === 'agentName';
  }
  return false;
}

function propertyKeyName(key: AnyNode): string | undefined {
  if (key.type === 'Identifier') return key.name;
  if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
  return undefined;
}

/** A string known without running code: a string literal or a template with no substitutions. */
function staticString(node: Expression | AnyNode): string | undefined {
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) {
    return node.quasis[0]?.value.cooked ?? undefined;
  }
  return undefined;
}

/** Member-expression targets inside a destructuring pattern. */
function patternMembers(node: AnyNode): AnyNode[] {
  switch (node.type) {
    case 'MemberExpression':
      return [node];
    case 'ObjectPattern':
      return node.properties.flatMap((p) => patternMembers(p.type === 'RestElement' ? p.argument : p.value));
    case 'ArrayPattern':
      return node.elements.flatMap((e) => (e ? patternMembers(e) : []));
    case 'AssignmentPattern':
      return patternMembers(node.left);
    case 'RestElement':
      return patternMembers(node.argument);
    default:
      return [];
  }
}

// ---------------------------------------------------------------------------------------------
// Scopes: only precise enough to tell a module binding from a local of the same name.

function isShadowed(name: string, scopes: Set<string>[]): boolean {
  return scopes.some((scope) => scope.has(name));
}

/** Names a node declares for its own body, or undefined when it opens no scope. */
function scopeIntroducedBy(node: AnyNode): Set<string> | undefined {
  switch (node.type) {
    case 'FunctionDeclaration':
    case 'FunctionExpression':
    case 'ArrowFunctionExpression': {
      const names = new Set<string>();
      if (node.type === 'FunctionExpression' && node.id) names.add(node.id.name);
      for (const param of node.params) for (const name of boundNames(param)) names.add(name);
      if (node.body.type === 'BlockStatement') {
        for (const name of varNames(node.body)) names.add(name);
      }
      return names;
    }
    case 'BlockStatement':
    case 'StaticBlock':
      return lexicalNames(node.body);
    case 'SwitchStatement':
      return lexicalNames(node.cases.flatMap((c) => c.consequent));
    case 'ForStatement':
    case 'ForInStatement':
    case 'ForOfStatement': {
      const head = node.type === 'ForStatement' ? node.init : node.left;
      return head?.type === 'VariableDeclaration' && head.kind !== 'var' ? lexicalNames([head]) : undefined;
    }
    case 'CatchClause':
      return node.param ? new Set(boundNames(node.param)) : undefined;
    case 'ClassExpression':
      return node.id ? new Set([node.id.name]) : undefined;
    default:
      return undefined;
  }
}

/** let/const/class/function declared directly in a statement list. */
function lexicalNames(statements: AnyNode[]): Set<string> {
  const names = new Set<string>();
  for (const statement of statements) {
    if (statement.type === 'VariableDeclaration' && statement.kind !== 'var') {
      for (const declarator of statement.declarations) for (const name of boundNames(declarator.id)) names.add(name);
    } else if ((statement.type === 'FunctionDeclaration' || statement.type === 'ClassDeclaration') && statement.id) {
      names.add(statement.id.name);
    }
  }
  return names;
}

/** `var` names hoisted to a function body (not descending into nested functions). */
function varNames(node: AnyNode): string[] {
  const names: string[] = [];
  const walk = (current: AnyNode): void => {
    if (current.type === 'VariableDeclaration' && current.kind === 'var') {
      for (const declarator of current.declarations) names.push(...boundNames(declarator.id));
    }
    for (const child of childNodes(current)) {
      if (child.type !== 'FunctionDeclaration' && child.type !== 'FunctionExpression' && child.type !== 'ArrowFunctionExpression') {
        walk(child);
      }
    }
  };
  walk(node);
  return names;
}

export function boundNames(pattern: Pattern | AnyNode): string[] {
  switch (pattern.type) {
    case 'Identifier':
      return [pattern.name];
    case 'ObjectPattern':
      return pattern.properties.flatMap((p) => boundNames(p.type === 'RestElement' ? p.argument : p.value));
    case 'ArrayPattern':
      return pattern.elements.flatMap((e) => (e ? boundNames(e) : []));
    case 'AssignmentPattern':
      return boundNames(pattern.left);
    case 'RestElement':
      return boundNames(pattern.argument);
    default:
      return [];
  }
}
