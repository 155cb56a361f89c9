/** Small getopt-style parser shared by the virtual shell's commands. */

export interface ParsedArgs {
  flags: Set<string>;
  values: Map<string, string[]>;
  operands: string[];
}

export class UsageError extends Error {}

/**
 * `flags`: single-letter boolean options; `values`: letters taking an argument (`-n 5`, `-n5`);
 * `long`: `--name` → 'flag' | 'value'. `-` alone and everything after `--` are operands.
 * `numericShorthand` maps `-5` to the given value option (head/tail's `-N`).
 */
export function parseArgs(
  command: string,
  args: string[],
  spec: { flags?: string; values?: string; long?: Record<string, 'flag' | 'value'>; numericShorthand?: string },
): ParsedArgs {
  const parsed: ParsedArgs = { flags: new Set(), values: new Map(), operands: [] };
  const addValue = (key: string, value: string): void => {
    parsed.values.set(key, [...(parsed.values.get(key) ?? []), value]);
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      parsed.operands.push(...args.slice(i + 1));
      break;
    }
    if (arg.startsWith('--') && spec.long) {
      const eq = arg.indexOf('=');
      const name = arg.slice(2, eq === -1 ? undefined : eq);
      const kind = spec.long[name];
      if (!kind) throw new UsageError(`${command}: unrecognized option '${arg}'`);
      if (kind === 'flag') parsed.flags.add(name);
      else if (eq !== -1) addValue(name, arg.slice(eq + 1));
      else if (i + 1 < args.length) addValue(name, args[++i]!);
      else throw new UsageError(`${command}: option '--${name}' requires an argument`);
      continue;
    }
    if (arg.length > 1 && arg.startsWith('-')) {
      if (spec.numericShorthand && /^-\d+$/.test(arg)) {
        addValue(spec.numericShorthand, arg.slice(1));
        continue;
      }
      for (let j = 1; j < arg.length; j++) {
        const letter = arg[j]!;
        if (spec.values?.includes(letter)) {
          const rest = arg.slice(j + 1);
          if (rest !== '') addValue(letter, rest);
          else if (i + 1 < args.length) addValue(letter, args[++i]!);
          else throw new UsageError(`${command}: option requires an argument -- '${letter}'`);
          break;
        }
        if (!spec.flags?.includes(letter)) throw new UsageError(`${command}: invalid option -- '${letter}'`);
        parsed.flags.add(letter);
      }
      continue;
    }
    parsed.operands.push(arg);
  }
  return parsed;
}

export function lastValue(parsed: ParsedArgs, key: string): string | undefined {
  const list = parsed.values.get(key);
  return list?.[list.length - 1];
}
