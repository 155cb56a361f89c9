/**
 * `defineMcpConnection()` and the `McpConnectionDefinition` type (skills-subagents-mcp.md §3.1).
 * The same validation runs when a definition is declared, mounted or connected; every message
 * names the offending field.
 */
import * as v from 'valibot';
import { describeValue, isPlainObject, kindOf } from '../common/values.ts';

export type McpTransport = 'streamable-http' | 'sse';
export type McpAuth = string | (() => string | Promise<string>);

export interface McpConnectionDefinition {
  name: string;
  url: string | URL;
  transport?: McpTransport;
  auth?: McpAuth;
  headers?: HeadersInit;
  requestInit?: RequestInit;
  fetch?: typeof fetch;
  timeoutMs?: number;
  resetTimeoutOnProgress?: boolean;
  tools?: string[];
  optional?: boolean;
}

export type McpDefinitionSite = 'defineMcpConnection' | 'useMcpConnection' | 'createMcpConnection';

const KNOWN_KEYS = [
  'name',
  'url',
  'transport',
  'auth',
  'headers',
  'requestInit',
  'fetch',
  'timeoutMs',
  'resetTimeoutOnProgress',
  'tools',
  'optional',
] as const;

const nonEmptyString = v.pipe(
  v.string(),
  v.check((s) => s.trim() !== ''),
);
const absoluteUrl = v.union([
  v.instance(URL),
  v.pipe(
    v.string(),
    v.check((s) => URL.canParse(s)),
  ),
]);
const plainObject = v.custom<Record<string, unknown>>(isPlainObject);
const headerPairs = v.array(v.tuple([v.string(), v.string()]));
const headerRecord = v.pipe(
  plainObject,
  v.check((o) => Object.values(o).every((x) => typeof x === 'string')),
);
// `Headers` is read when a value is checked, not when this module loads: on Node the global is a
// lazy getter that loads the whole fetch stack, which a process that never defines an MCP server
// should not pay for at start.
const headersObject = v.custom<Headers>((value) => value instanceof Headers);
const headersSchema = v.union([headersObject, headerPairs, headerRecord]);

/** Field → [schema, what the message says it must be]. */
const FIELD_RULES: Record<(typeof KNOWN_KEYS)[number], [v.GenericSchema, string]> = {
  name: [nonEmptyString, 'a non-empty string (it is the mcp__<name>__ tool namespace)'],
  url: [absoluteUrl, 'a URL or a string that parses as an absolute URL'],
  transport: [v.picklist(['streamable-http', 'sse']), `"streamable-http" or "sse"`],
  auth: [v.union([nonEmptyString, v.function()]), 'a non-empty string or a function returning the token'],
  headers: [headersSchema, 'a Headers object, an array of [name, value] pairs, or an object of string values'],
  requestInit: [plainObject, 'a plain object (RequestInit)'],
  fetch: [v.function(), 'a function'],
  timeoutMs: [
    v.pipe(
      v.number(),
      v.check((n) => Number.isFinite(n) && n > 0),
    ),
    'a positive finite number (milliseconds)',
  ],
  resetTimeoutOnProgress: [v.boolean(), 'a boolean'],
  tools: [v.array(nonEmptyString), 'an array of non-empty tool names'],
  optional: [v.boolean(), 'a boolean'],
};

const validated = new WeakSet<object>();

/**
 * Validates a connection definition and returns a frozen copy holding only the declared keys (with
 * a frozen copy of `tools`). Throws `Error('[flue] <site>(): …')` naming the field.
 */
export function validateMcpConnectionDefinition(
  value: unknown,
  site: McpDefinitionSite = 'defineMcpConnection',
): Readonly<McpConnectionDefinition> {
  if (typeof value === 'object' && value !== null && validated.has(value)) {
    return value as Readonly<McpConnectionDefinition>;
  }
  const where = `[flue] ${site}():`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${where} an MCP connection definition must be an object, received ${kindOf(value)}.`);
  }
  const raw = value as Record<string, unknown>;
  const subject = typeof raw.name === 'string' && raw.name.trim() !== '' ? `MCP connection "${raw.name}"` : 'an MCP connection definition';
  for (const key of Object.keys(raw)) {
    if (!(KNOWN_KEYS as readonly string[]).includes(key)) {
      throw new Error(`${where} ${subject}: unknown field "${key}". Allowed fields: ${KNOWN_KEYS.join(', ')}.`);
    }
  }
  const copy: Record<string, unknown> = {};
  for (const key of KNOWN_KEYS) {
    const field = raw[key];
    const required = key === 'name' || key === 'url';
    if (field === undefined) {
      if (required) throw new Error(`${where} ${subject}: "${key}" is required.`);
      continue;
    }
    const [schema, expected] = FIELD_RULES[key];
    if (!v.is(schema, field)) {
      throw new Error(`${where} ${subject}: "${key}" must be ${expected}, received ${describeValue(field)}.`);
    }
    copy[key] = key === 'tools' ? Object.freeze([...(field as string[])]) : field;
  }
  const definition = Object.freeze(copy) as unknown as Readonly<McpConnectionDefinition>;
  validated.add(definition);
  return definition;
}

/**
 * Declares a reusable MCP connection: validates at module load and returns a frozen copy. Per-mount
 * overrides spread cleanly: `useMcpConnection({ ...linear, tools: ['create_issue'] })`.
 */
export function defineMcpConnection(definition: McpConnectionDefinition): McpConnectionDefinition {
  return validateMcpConnectionDefinition(definition, 'defineMcpConnection') as McpConnectionDefinition;
}

/** The definition's endpoint as a URL (validation guarantees it parses). */
export function mcpConnectionUrl(definition: Pick<McpConnectionDefinition, 'url'>): URL {
  return new URL(definition.url instanceof URL ? definition.url.href : definition.url);
}
