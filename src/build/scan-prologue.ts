/**
 * The directive prologue of an agent module, read from the original text (build-and-cli.md §1):
 * see scan.ts for why esbuild's output cannot be used for it.
 */
import { Parser, tokTypes, type AnyNode, type Options, type Token, type TokenType } from 'acorn';

/** The acorn internals the prologue reader drives; stable across acorn 8 (plugins use them). */
interface StatementParser {
  type: TokenType;
  start: number;
  end: number;
  nextToken(): void;
  parseStatement(context: null, topLevel: boolean, exports: Record<string, unknown>): AnyNode;
}

// ECMAScript LineTerminator (acorn's own `lineBreak` set); only ever tested on the gap between
// two tokens, to apply the automatic-semicolon rule.
const LINE_TERMINATOR = /\r\n?|[\n\u2028\u2029]/;

/**
 * Raw source text of each directive in the prologue: the leading statements that consist of
 * exactly one string literal. A shebang, comments and any directive may precede one another.
 * acorn parses one statement at a time, so ASI and continuations (`'x'\n.length`,
 * `'x' as T`) follow the language, and it never reads past the first non-string statement,
 * where TS syntax may begin.
 */
export function readDirectivePrologue(source: string): string[] {
  const tokens: Token[] = [];
  const options: Options = {
    ecmaVersion: 'latest',
    sourceType: 'module',
    allowHashBang: true,
    onToken: tokens,
  };
  const directives: string[] = [];
  let parser: StatementParser;
  try {
    // The constructor is `protected` in acorn's typings; `Parser.parse` would read the whole file.
    const Construct = Parser as unknown as new (options: Options, input: string) => StatementParser;
    parser = new Construct(options, source);
    parser.nextToken();
  } catch {
    return directives; // the first token is not JavaScript (e.g. a decorator): no prologue
  }

  while (parser.type === tokTypes.string) {
    const literalStart = parser.start;
    const literalEnd = parser.end;
    const consumedBefore = tokens.length;
    let statement: AnyNode;
    try {
      statement = parser.parseStatement(null, true, Object.create(null) as Record<string, unknown>);
    } catch (error) {
      // acorn stopped at syntax it does not know (TS, decorators) right after this string.
      // The string still ends its statement if `;` closed it, or if a line break lies between it
      // and the unreadable token (ASI); anything else means the string began a longer expression.
      const after = tokens.slice(consumedBefore + 1);
      const failedAt = (error as { pos?: number }).pos;
      const closedBySemicolon = after.length > 0 && after[0]!.type === tokTypes.semi;
      const closedByLineBreak =
        after.length === 0 && typeof failedAt === 'number' && LINE_TERMINATOR.test(source.slice(literalEnd, failedAt));
      if (closedBySemicolon || closedByLineBreak) directives.push(source.slice(literalStart, literalEnd));
      break;
    }
    const isDirective =
      statement.type === 'ExpressionStatement' &&
      statement.expression.type === 'Literal' &&
      typeof statement.expression.value === 'string' &&
      statement.expression.start === literalStart &&
      statement.expression.end === literalEnd;
    if (!isDirective) break;
    directives.push(source.slice(literalStart, literalEnd));
  }
  return directives;
}

/** Raw text must be exactly `use agent` between matching quotes; escapes do not count. */
export function isUseAgentDirective(raw: string): boolean {
  return raw === "'use agent'" || raw === '"use agent"';
}
