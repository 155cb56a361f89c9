/**
 * Argument handling shared by every `flue` command (build-and-cli.md §5.1): strict `parseArgs`,
 * literal string values, repeated-flag and extra-positional detection, usage errors with a hint.
 */
import { parseArgs } from 'node:util';

export class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

export type ParsedValues<S extends OptionSpecs> = {
  [K in keyof S]?: S[K]['type'] extends 'string' ? string : boolean;
};

export interface Parsed<S extends OptionSpecs> {
  values: ParsedValues<S>;
  positionals: string[];
  /** Arguments after a bare `--` (only when `passthrough` is allowed). */
  passthrough: string[];
}

/**
 * Parses one command's arguments. `maxPositionals` bounds extra positionals; `passthrough` lets
 * arguments after a bare `--` through (dev/deploy), otherwise a `--` is a usage error.
 */
export function parseCommandArgs<S extends OptionSpecs>(
  command: string,
  args: readonly string[],
  options: S,
  settings: { maxPositionals: number; passthrough?: boolean },
): Parsed<S> {
  const separator = args.indexOf('--');
  const own = separator === -1 ? [...args] : args.slice(0, separator);
  const passthrough = separator === -1 ? [] : args.slice(separator + 1);
  if (separator !== -1 && settings.passthrough !== true) {
    throw new UsageError(`\`flue ${command}\` does not accept arguments after --.`, command);
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: own, options: options as Record<string, OptionSpec>, strict: true, allowPositionals: true, tokens: true });
  } catch (error) {
    throw new UsageError(cleanParseError(error as Error), command);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} may only be passed once.`, command);
    seen.add(token.name);
  }
  if (parsed.positionals.length > settings.maxPositionals) {
    const extra = parsed.positionals[settings.maxPositionals]!;
    throw new UsageError(`Unexpected argument "${extra}".`, command);
  }
  return { values: parsed.values as ParsedValues<S>, positionals: parsed.positionals, passthrough };
}

function cleanParseError(error: Error): string {
  const code = (error as { code?: string }).code;
  const message = error.message;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(message)?.[1];
    if (flag !== undefined) return `Unknown option ${flag}.`;
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = /Option '(?:-\w, )?(--[^ ']+)/.exec(message)?.[1];
    if (flag !== undefined && /argument missing/.test(message)) return `${flag} requires a value.`;
    if (flag !== undefined) return `${flag} does not take a value.`;
  }
  // Node's messages carry hints about `--` that do not fit our CLI; keep the first sentence.
  return message.split('\n')[0]!.replace(/\. To specify .*$/, '.');
}

export function hintFor(command: string | undefined): string {
  return command === undefined ? 'Run `flue --help` for usage.' : `Run \`flue ${command} --help\` for usage.`;
}
