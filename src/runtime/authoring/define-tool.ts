/**
 * `defineTool()` and the tool definition types. The definition is plain data
 * plus a `run` function; executing a call lives in `tool-runner.ts`, durable steps in
 * `tool-step.ts`.
 */
import * as v from 'valibot';
import { toJsonSchema } from '@valibot/to-json-schema';
import { ToolDefinitionError, ToolNameConflictError } from '../common/errors.ts';
import type { FlueHarness, FlueLogger } from '../common/types.ts';
import { describeValue, isPlainObject, kindOf } from '../common/values.ts';

// ── Schemas ───────────────────────────────────────────────────────────────────────────────────

/** A Valibot schema whose parsed value is an object: the model always sends a JSON object. */
export type ToolInputSchema = v.GenericSchema<unknown, Record<string, unknown>>;
export type ToolOutputSchema = v.GenericSchema;

// ── Context ───────────────────────────────────────────────────────────────────────────────────

export interface ToolStep {
  do<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
}

/** The part of the context every tool gets, plus the capability keys its flags switch on. */
export type ToolContextBase<Harness = undefined, Durable = undefined> = {
  readonly toolCallId: string;
  readonly signal?: AbortSignal;
  readonly log: FlueLogger;
} & ([Harness] extends [true] ? { readonly harness: FlueHarness } : {}) &
  ([Durable] extends [true] ? { readonly step: ToolStep } : {});

type DataOf<Input> = Input extends ToolInputSchema ? v.InferOutput<Input> : never;

/**
 * The context passed to `run`. `data` exists only when `input` is declared, `harness`
 * only with `harness: true`, `step` only with `durable: true`. The tuple-wrapped checks keep a
 * flag typed as plain `boolean` from turning the context into a union.
 */
export type ToolContext<Input = undefined, Harness = undefined, Durable = undefined> = ToolContextBase<Harness, Durable> &
  ([Input] extends [undefined] ? {} : { readonly data: DataOf<Input> });

// ── Results ───────────────────────────────────────────────────────────────────────────────────

export interface ToolRunEnvelope<O> {
  output?: O;
  terminate?: boolean;
}

/**
 * What `run` may return for an output type `T`. Without an output schema (`T` = unknown) a string
 * or nothing is fine; with one, only the envelope or a string the schema accepts.
 */
export type ToolRunResult<T> = ToolRunEnvelope<T> | (unknown extends T ? string | void : Extract<T, string>);
export type ToolRunReturn<T> = ToolRunResult<T> | Promise<ToolRunResult<T>>;

/** The value `run` hands in: the output schema's *input* type, since the runtime parses it. */
type RunOutputOf<O> = [O] extends [ToolOutputSchema] ? v.InferInput<O> : unknown;

// ── Definition ────────────────────────────────────────────────────────────────────────────────

/** MCP-compatible hints. Unknown keys are preserved: MCP servers may add more. */
export interface McpToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

/**
 * A validated, frozen tool definition. The defaults describe "any tool", so heterogeneous tool
 * lists type as `ToolDefinition[]` (`run` is a method, hence bivariant in its context).
 *
 * `parameters` is never accepted from user options; adapters whose arguments arrive as JSON
 * Schema (MCP server tools) set it on the definitions they build (which `useTool` mounts as they
 * are, see `adoptToolDefinition`), and it wins over `input` in `toolParameters`.
 */
export interface ToolDefinition<
  I extends ToolInputSchema | undefined = ToolInputSchema | undefined,
  O extends ToolOutputSchema | undefined = ToolOutputSchema | undefined,
  H extends boolean | undefined = boolean | undefined,
  D extends boolean | undefined = boolean | undefined,
> {
  readonly name: string;
  readonly description: string;
  readonly input?: I;
  readonly output?: O;
  readonly harness?: H;
  readonly durable?: D;
  readonly timeoutMs?: number;
  readonly annotations?: Readonly<McpToolAnnotations>;
  readonly parameters?: Readonly<Record<string, unknown>>;
  run(ctx: ToolContext<I, H, D>): ToolRunReturn<RunOutputOf<O>>;
}

interface ToolOptionsBase<O, H, D> {
  name: string;
  description: string;
  output?: O;
  harness?: H;
  durable?: D;
  timeoutMs?: number;
  annotations?: McpToolAnnotations;
}

/**
 * Options with an `input` schema. Kept apart from the no-input shape (and offered as overloads)
 * because a conditional `data` key cannot be resolved while `I` is still generic — an approval-gate
 * hook that passes a caller's generic schema inline and reads `data`.
 */
export interface ToolOptionsWithInput<
  I extends ToolInputSchema,
  O extends ToolOutputSchema | undefined = undefined,
  H extends boolean | undefined = undefined,
  D extends boolean | undefined = undefined,
> extends ToolOptionsBase<O, H, D> {
  input: I;
  run(ctx: ToolContextBase<H, D> & { readonly data: v.InferOutput<I> }): ToolRunReturn<RunOutputOf<O>>;
}

export interface ToolOptionsWithoutInput<
  O extends ToolOutputSchema | undefined = undefined,
  H extends boolean | undefined = undefined,
  D extends boolean | undefined = undefined,
> extends ToolOptionsBase<O, H, D> {
  input?: undefined;
  run(ctx: ToolContextBase<H, D>): ToolRunReturn<RunOutputOf<O>>;
}

/** Any inline definition object (what `useTool` accepts besides a `defineTool` result). */
export type ToolDefinitionInput<
  I extends ToolInputSchema = ToolInputSchema,
  O extends ToolOutputSchema | undefined = ToolOutputSchema | undefined,
  H extends boolean | undefined = boolean | undefined,
  D extends boolean | undefined = boolean | undefined,
> = ToolOptionsWithInput<I, O, H, D> | ToolOptionsWithoutInput<O, H, D>;

/**
 * The call signatures `useTool` needs so inline objects infer exactly like `defineTool`:
 * `export const useTool: UseToolSignature = (tool) => { … }`. The wide `ToolDefinition` overload
 * comes last so an inline object is never contextually typed by it first.
 */
export interface UseToolSignature {
  <
    O extends ToolOutputSchema | undefined = undefined,
    H extends boolean | undefined = undefined,
    D extends boolean | undefined = undefined,
  >(
    tool: ToolOptionsWithoutInput<O, H, D>,
  ): void;
  <
    I extends ToolInputSchema,
    O extends ToolOutputSchema | undefined = undefined,
    H extends boolean | undefined = undefined,
    D extends boolean | undefined = undefined,
  >(
    tool: ToolOptionsWithInput<I, O, H, D>,
  ): void;
  (tool: ToolDefinition): void;
}

/** The arguments `run` receives as `data` (`undefined` for a tool without `input`). */
export type ToolInput<T> =
  T extends ToolDefinition<infer I, any, any, any> ? ([I] extends [ToolInputSchema] ? v.InferOutput<I> : undefined) : never;

/** The recorded output type: the output schema's parsed type, else `unknown`. */
export type ToolOutput<T> =
  T extends ToolDefinition<any, infer O, any, any> ? ([O] extends [ToolOutputSchema] ? v.InferOutput<O> : unknown) : never;

// ── defineTool ────────────────────────────────────────────────────────────────────────────────

export function defineTool<
  O extends ToolOutputSchema | undefined = undefined,
  H extends boolean | undefined = undefined,
  D extends boolean | undefined = undefined,
>(options: ToolOptionsWithoutInput<O, H, D>): ToolDefinition<undefined, O, H, D>;
export function defineTool<
  I extends ToolInputSchema,
  O extends ToolOutputSchema | undefined = undefined,
  H extends boolean | undefined = undefined,
  D extends boolean | undefined = undefined,
>(options: ToolOptionsWithInput<I, O, H, D>): ToolDefinition<I, O, H, D>;
export function defineTool(options: unknown): ToolDefinition {
  return validateToolDefinition(options, 'defineTool');
}

const KNOWN_KEYS = ['name', 'description', 'input', 'output', 'harness', 'durable', 'timeoutMs', 'annotations', 'run'] as const;

const OBJECT_SCHEMA_TYPES = new Set(['object', 'strict_object', 'loose_object', 'object_with_rest']);
const ANNOTATION_HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

// Definitions this module produced; re-validating them on every render (useTool) would only
// allocate a new identity for the same tool.
const validated = new WeakSet<object>();

/**
 * Marks a definition built by a runtime adapter (MCP server tools, whose arguments arrive as JSON
 * Schema in `parameters`) as already valid, so `useTool()` mounts it as it is.
 */
export function adoptToolDefinition(definition: ToolDefinition): ToolDefinition {
  if (!Object.isFrozen(definition)) throw new Error('[flue] An adopted tool definition must be frozen.');
  validated.add(definition);
  return definition;
}

/**
 * The validation shared by `defineTool` and `useTool`. Returns a frozen copy that
 * holds only the declared keys; throws a `ToolDefinitionError` naming the tool and the field, so
 * a bad `useTool()` inside a render reaches the submission's caller with its reason.
 */
export function validateToolDefinition(value: unknown, site: 'defineTool' | 'useTool'): ToolDefinition {
  if (typeof value === 'object' && value !== null && validated.has(value)) return value as ToolDefinition;
  const where = `[flue] ${site}():`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ToolDefinitionError(`${where} a tool definition must be an object, received ${kindOf(value)}.`, { site });
  }
  const raw = value as Record<string, unknown>;
  const tool = typeof raw.name === 'string' && raw.name.trim() !== '' ? `tool "${raw.name}"` : 'a tool definition';
  const toolName = typeof raw.name === 'string' && raw.name.trim() !== '' ? raw.name : undefined;
  const fail = (message: string): never => {
    throw new ToolDefinitionError(`${where} ${tool}: ${message}`, { site, ...(toolName === undefined ? {} : { tool: toolName }) });
  };

  for (const key of Object.keys(raw)) {
    if (!(KNOWN_KEYS as readonly string[]).includes(key)) {
      fail(`unknown key "${key}". Allowed keys: ${KNOWN_KEYS.join(', ')}.`);
    }
  }
  if (typeof raw.name !== 'string' || raw.name.trim() === '') {
    fail(`"name" must be a non-empty string, received ${describeValue(raw.name)}.`);
  }
  if (typeof raw.description !== 'string' || raw.description.trim() === '') {
    fail(`"description" must be a non-empty string; it is the model's only documentation of the tool.`);
  }
  if (raw.input !== undefined && !isObjectSchema(raw.input)) {
    fail(
      `input must be a top-level object schema. Use v.object(), v.strictObject(), v.looseObject() or v.objectWithRest() (optionally inside v.pipe()).`,
    );
  }
  if (raw.output !== undefined && !isValibotSchema(raw.output)) {
    fail(`"output" must be a Valibot schema.`);
  }
  for (const flag of ['harness', 'durable'] as const) {
    if (raw[flag] !== undefined && typeof raw[flag] !== 'boolean') {
      fail(`"${flag}" must be a boolean when present, received ${kindOf(raw[flag])}.`);
    }
  }
  if (raw.timeoutMs !== undefined) {
    const ms = raw.timeoutMs;
    if (typeof ms !== 'number' || !Number.isInteger(ms) || ms <= 0) {
      fail(`"timeoutMs" must be a positive finite integer (milliseconds), received ${describeValue(ms)}.`);
    }
  }
  let annotations: Readonly<McpToolAnnotations> | undefined;
  if (raw.annotations !== undefined) annotations = validateAnnotations(raw.annotations, fail);
  if (typeof raw.run !== 'function') {
    fail(`"run" must be a function, received ${kindOf(raw.run)}.`);
  }

  // Copy only what was declared, so `'input' in tool` means the tool has input.
  const copy: Record<string, unknown> = { name: raw.name, description: raw.description };
  for (const key of ['input', 'output', 'harness', 'durable', 'timeoutMs'] as const) {
    if (raw[key] !== undefined) copy[key] = raw[key];
  }
  if (annotations !== undefined) copy.annotations = annotations;
  copy.run = raw.run;
  const definition = Object.freeze(copy) as unknown as ToolDefinition;
  validated.add(definition);
  return definition;
}

function validateAnnotations(value: unknown, fail: (message: string) => never): Readonly<McpToolAnnotations> {
  if (!isPlainObject(value)) return fail(`"annotations" must be a plain object, received ${kindOf(value)}.`);
  const annotations = value as Record<string, unknown>;
  if (annotations.title !== undefined && typeof annotations.title !== 'string') {
    fail(`"annotations.title" must be a string, received ${kindOf(annotations.title)}.`);
  }
  for (const hint of ANNOTATION_HINTS) {
    if (annotations[hint] !== undefined && typeof annotations[hint] !== 'boolean') {
      fail(`"annotations.${hint}" must be a boolean, received ${kindOf(annotations[hint])}.`);
    }
  }
  return Object.freeze({ ...annotations }) as Readonly<McpToolAnnotations>;
}

function isValibotSchema(value: unknown): value is v.GenericSchema {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'schema' &&
    typeof (value as { '~run'?: unknown })['~run'] === 'function'
  );
}

/** `v.pipe(schema, …)` keeps the wrapped schema's `type`, so piped objects pass too. */
function isObjectSchema(value: unknown): value is ToolInputSchema {
  return isValibotSchema(value) && OBJECT_SCHEMA_TYPES.has(value.type);
}

/** Like `kindOf`, but shows strings and numbers themselves. */
// ── What the model sees ───────────────────────────────────────────────────────────────────────

/**
 * The provider-facing JSON Schema for a tool's arguments (tools.md §3). Converted in `input` type
 * mode (what the model must send, before transforms); constructs JSON Schema cannot express are
 * left out rather than failing the render — the Valibot parse still enforces them.
 */
const parametersOf = new WeakMap<ToolDefinition, Record<string, unknown>>();

/**
 * The JSON Schema the model is offered for `tool`. Converted once per definition (definitions are
 * frozen), since every turn's request and resource snapshot ask for it; treat it as read-only.
 */
export function toolParameters(tool: ToolDefinition): Record<string, unknown> {
  let schema = parametersOf.get(tool);
  if (schema === undefined) {
    schema = convertParameters(tool);
    parametersOf.set(tool, schema);
  }
  return schema;
}

/** A tool as a model request offers it: its name, description and argument schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

const specOf = new WeakMap<ToolDefinition, ToolSpec>();

/**
 * The tool as a model request offers it, built once per definition (definitions are frozen), so
 * every turn that offers an unchanged tool hands over the same object; treat it as read-only.
 */
export function toolSpec(tool: ToolDefinition): ToolSpec {
  let spec = specOf.get(tool);
  if (spec === undefined) {
    spec = { name: tool.name, description: tool.description, parameters: toolParameters(tool) };
    specOf.set(tool, spec);
  }
  return spec;
}

function convertParameters(tool: ToolDefinition): Record<string, unknown> {
  if (tool.parameters !== undefined) return structuredClone(tool.parameters) as Record<string, unknown>;
  if (tool.input === undefined) return { type: 'object', properties: {} };
  const { $schema: _ignored, ...schema } = toJsonSchema(tool.input, {
    typeMode: 'input',
    errorMode: 'ignore',
  }) as Record<string, unknown>;
  return schema;
}

// ── Tool-set assembly (tools.md §11) ──────────────────────────────────────────────────────────

/** The framework's own tools, reserved in every conversation. */
export const RESERVED_TOOL_NAMES: readonly string[] = Object.freeze(['task', 'activate_skill', 'read_skill_resource']);

/** The result tools of `harness.prompt()`, reserved inside harness prompts only. */
export const HARNESS_RESERVED_TOOL_NAMES: readonly string[] = Object.freeze(['finish', 'give_up']);

/**
 * The groups of one render's tool set, in assembly order. `framework` and `result` are the
 * runtime's own tools and may use reserved names; `builtin` (sandbox/adapter tools) and `custom`
 * (`useTool` + MCP) are user groups and may not. `harnessPrompt` marks a harness prompt's set,
 * where `finish`/`give_up` are reserved too.
 */
export interface ToolSetGroups {
  framework?: readonly ToolDefinition[];
  builtin?: readonly ToolDefinition[];
  custom?: readonly ToolDefinition[];
  result?: readonly ToolDefinition[];
  harnessPrompt?: boolean;
}

/** Flattens the groups in order; throws `ToolNameConflictError` before any model call. */
export function assembleToolSet(groups: ToolSetGroups): ToolDefinition[] {
  const ordered: [readonly ToolDefinition[] | undefined, boolean][] = [
    [groups.framework, false],
    [groups.builtin, true],
    [groups.custom, true],
    [groups.result, false],
  ];
  const seen = new Set<string>();
  const tools: ToolDefinition[] = [];
  for (const [group, userGroup] of ordered) {
    for (const tool of group ?? []) {
      if (userGroup && RESERVED_TOOL_NAMES.includes(tool.name)) {
        throw new ToolNameConflictError(`Tool name "${tool.name}" is reserved by the framework.`);
      }
      if (userGroup && groups.harnessPrompt && HARNESS_RESERVED_TOOL_NAMES.includes(tool.name)) {
        throw new ToolNameConflictError(`Tool name "${tool.name}" is reserved by the framework inside harness prompts.`);
      }
      if (seen.has(tool.name)) throw new ToolNameConflictError(`Duplicate tool name "${tool.name}".`);
      seen.add(tool.name);
      tools.push(tool);
    }
  }
  return tools;
}
