/**
 * Tokenizer and parser for the virtual shell. Words keep their quoting structure
 * so expansion ($VAR, globbing) can happen at run time, after earlier commands set `$?`/variables.
 * Constructs outside the supported subset raise `ShellUnsupported`, which the interpreter reports
 * as `exitCode: 2` with `<construct>: not supported` rather than silently misbehaving.
 */

export type WordPart = { kind: 'lit'; text: string; quoted: boolean } | { kind: 'var'; name: string; quoted: boolean };
export type Word = WordPart[];

export type RedirectOp = '>' | '>>' | '<' | '2>' | '2>>' | '2>&1' | '>&2' | '&>' | '&>>';
export interface Redirect {
  op: RedirectOp;
  target?: Word;
}
export interface SimpleCommand {
  words: Word[];
  redirects: Redirect[];
}
export type Pipeline = SimpleCommand[];
export type Connector = ';' | '&&' | '||';
export interface CommandList {
  items: { pipeline: Pipeline; connector: Connector }[]; // connector joins the item to the previous one
}

export class ShellUnsupported extends Error {
  readonly construct: string;
  constructor(construct: string) {
    super(`${construct}: not supported`);
    this.construct = construct;
  }
}
export class ShellSyntaxError extends Error {}

type Token = { type: 'word'; word: Word } | { type: 'op'; op: string } | { type: 'redir'; op: RedirectOp };

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let word: Word | null = null;
  const lit = (text: string, quoted: boolean): void => {
    word ??= [];
    const last = word[word.length - 1];
    if (last && last.kind === 'lit' && last.quoted === quoted) last.text += text;
    else word.push({ kind: 'lit', text, quoted });
  };
  const endWord = (): void => {
    if (word) tokens.push({ type: 'word', word });
    word = null;
  };
  /** A bare fd number just before `>` (e.g. `2>`) belongs to the redirect, not the word. */
  const takeFd = (): string | undefined => {
    const w = word as Word | null;
    if (w && w.length === 1 && w[0]!.kind === 'lit' && !w[0]!.quoted && /^[12]$/.test(w[0]!.text)) {
      word = null;
      return w[0]!.text;
    }
    return undefined;
  };
  // Reads `$NAME`, `${NAME}`, `$?` starting at `i` (the `$`); returns the new index or -1.
  const readVar = (i: number, quoted: boolean): number => {
    const next = input[i + 1];
    if (next === '(') throw new ShellUnsupported(input[i + 2] === '(' ? '$((' : '$(');
    if (next === '?' || next === '#' || next === '$' || (next !== undefined && /[0-9@*!]/.test(next))) {
      word ??= [];
      word.push({ kind: 'var', name: next, quoted });
      return i + 2;
    }
    if (next === '{') {
      const close = input.indexOf('}', i + 2);
      if (close === -1) throw new ShellSyntaxError('syntax error: unterminated ${');
      const name = input.slice(i + 2, close);
      if (!/^([A-Za-z_][A-Za-z0-9_]*|\?)$/.test(name)) throw new ShellUnsupported(`\${${name}}`);
      word ??= [];
      word.push({ kind: 'var', name, quoted });
      return close + 1;
    }
    NAME.lastIndex = i + 1;
    const match = NAME.exec(input);
    if (!match) return -1;
    word ??= [];
    word.push({ kind: 'var', name: match[0], quoted });
    return i + 1 + match[0].length;
  };

  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\r') {
      endWord();
      i++;
    } else if (ch === '\n') {
      endWord();
      tokens.push({ type: 'op', op: '\n' });
      i++;
    } else if (ch === '#' && word === null) {
      while (i < input.length && input[i] !== '\n') i++;
    } else if (ch === '\\') {
      if (input[i + 1] === '\n')
        i += 2; // line continuation
      else {
        if (i + 1 < input.length) lit(input[i + 1]!, true);
        i += 2;
      }
    } else if (ch === "'") {
      const close = input.indexOf("'", i + 1);
      if (close === -1) throw new ShellSyntaxError('syntax error: unterminated quote');
      lit(input.slice(i + 1, close), true);
      i = close + 1;
    } else if (ch === '"') {
      word ??= [];
      i++;
      let closed = false;
      while (i < input.length) {
        const c = input[i]!;
        if (c === '"') {
          closed = true;
          i++;
          break;
        }
        if (c === '\\' && i + 1 < input.length && '"\\$`\n'.includes(input[i + 1]!)) {
          if (input[i + 1] !== '\n') lit(input[i + 1]!, true);
          i += 2;
        } else if (c === '$') {
          const next = readVar(i, true);
          if (next === -1) {
            lit('$', true);
            i++;
          } else i = next;
        } else if (c === '`') {
          throw new ShellUnsupported('`');
        } else {
          lit(c, true);
          i++;
        }
      }
      if (!closed) throw new ShellSyntaxError('syntax error: unterminated quote');
    } else if (ch === '$') {
      const next = readVar(i, false);
      if (next === -1) {
        lit('$', false);
        i++;
      } else i = next;
    } else if (ch === '`') {
      throw new ShellUnsupported('`');
    } else if (ch === '(' || ch === ')') {
      throw new ShellUnsupported(ch);
    } else if (ch === ';') {
      endWord();
      if (input[i + 1] === ';') throw new ShellUnsupported(';;');
      tokens.push({ type: 'op', op: ';' });
      i++;
    } else if (ch === '|') {
      endWord();
      if (input[i + 1] === '|') {
        tokens.push({ type: 'op', op: '||' });
        i += 2;
      } else if (input[i + 1] === '&') {
        throw new ShellUnsupported('|&');
      } else {
        tokens.push({ type: 'op', op: '|' });
        i++;
      }
    } else if (ch === '&') {
      endWord();
      if (input[i + 1] === '&') {
        tokens.push({ type: 'op', op: '&&' });
        i += 2;
      } else if (input[i + 1] === '>') {
        const append = input[i + 2] === '>';
        tokens.push({ type: 'redir', op: append ? '&>>' : '&>' });
        i += append ? 3 : 2;
      } else {
        throw new ShellUnsupported('&');
      }
    } else if (ch === '>' || ch === '<') {
      const fd = takeFd();
      endWord();
      if (ch === '<') {
        if (input[i + 1] === '<') throw new ShellUnsupported('<<');
        if (input[i + 1] === '(') throw new ShellUnsupported('<(');
        if (fd) throw new ShellUnsupported(`${fd}<`);
        tokens.push({ type: 'redir', op: '<' });
        i++;
        continue;
      }
      const append = input[i + 1] === '>';
      let j = i + (append ? 2 : 1);
      if (!append && input[j] === '&') {
        const target = input[j + 1];
        if (fd === '2' && target === '1') tokens.push({ type: 'redir', op: '2>&1' });
        else if ((fd === undefined || fd === '1') && target === '2') tokens.push({ type: 'redir', op: '>&2' });
        else if ((fd === undefined || fd === '1') && target === '1') {
          // `>&1` is a no-op.
        } else throw new ShellUnsupported(`${fd ?? ''}>&${target ?? ''}`);
        i = j + 2;
        continue;
      }
      if (fd === '2') tokens.push({ type: 'redir', op: append ? '2>>' : '2>' });
      else tokens.push({ type: 'redir', op: append ? '>>' : '>' });
      i = j;
    } else {
      lit(ch, false);
      i++;
    }
  }
  endWord();
  return tokens;
}

const NEEDS_TARGET = new Set<RedirectOp>(['>', '>>', '<', '2>', '2>>', '&>', '&>>']);

export function parse(input: string): CommandList {
  const tokens = tokenize(input);
  const items: CommandList['items'] = [];
  let connector: Connector = ';';
  let pipeline: Pipeline = [];
  let command: SimpleCommand = { words: [], redirects: [] };
  const isEmpty = (c: SimpleCommand): boolean => c.words.length === 0 && c.redirects.length === 0;

  for (let t = 0; t < tokens.length; t++) {
    const token = tokens[t]!;
    if (token.type === 'word') {
      command.words.push(token.word);
    } else if (token.type === 'redir') {
      if (NEEDS_TARGET.has(token.op)) {
        const target = tokens[t + 1];
        if (!target || target.type !== 'word') throw new ShellSyntaxError(`syntax error near unexpected token '${token.op}'`);
        command.redirects.push({ op: token.op, target: target.word });
        t++;
      } else command.redirects.push({ op: token.op });
    } else if (token.op === '|') {
      if (isEmpty(command)) throw new ShellSyntaxError("syntax error near unexpected token '|'");
      pipeline.push(command);
      command = { words: [], redirects: [] };
    } else {
      // ; && || newline end the pipeline.
      if (isEmpty(command)) {
        if (pipeline.length > 0 || token.op === '&&' || token.op === '||')
          throw new ShellSyntaxError(`syntax error near unexpected token '${token.op === '\n' ? 'newline' : token.op}'`);
        if (token.op === ';' && items.length === 0 && pipeline.length === 0)
          throw new ShellSyntaxError("syntax error near unexpected token ';'");
        continue; // blank line or trailing ;
      }
      pipeline.push(command);
      items.push({ pipeline, connector });
      pipeline = [];
      command = { words: [], redirects: [] };
      connector = token.op === '&&' ? '&&' : token.op === '||' ? '||' : ';';
    }
  }
  if (!isEmpty(command)) {
    pipeline.push(command);
    items.push({ pipeline, connector });
  } else if (pipeline.length > 0 || connector !== ';') {
    throw new ShellSyntaxError('syntax error: unexpected end of file');
  }
  return { items };
}
