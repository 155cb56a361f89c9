/**
 * Durable agent identity. The identity keys conversation storage and the
 * Durable Object class, so it must survive minification and never depend on registration order.
 */
import type * as v from 'valibot';
import { type DurabilityConfig, resolveDurability } from './durability-config.ts';
import { type BudgetConfig, resolveBudget } from './budget-config.ts';
import { AGENT_IDENTITY_PATTERN } from '../../shared/identity.ts';
import { asyncAgentError } from '../common/definition-errors.ts';
import { hostKind, registrationHint } from '../common/host-kind.ts';

export { AGENT_IDENTITY_PATTERN };

export interface AgentStatics {
  agentName?: string;
  initialData?: v.GenericSchema;
  durability?: DurabilityConfig;
  /** Spending limits per submission and per conversation (tokens, cost). */
  budget?: BudgetConfig;
}

export interface AgentProps {
  id: string;
}

export type AgentFunction<TProps = void> = [TProps] extends [void]
  ? () => string | undefined | void
  : (props: TProps) => string | undefined | void;

/** A zero-argument agent function is assignable too: subagents and tools-only agents take no props. */
export type Agent = AgentFunction<AgentProps> & AgentStatics;

/** Written by the build transform as a string literal, so minification cannot change it. */
export interface AgentIdentityBinding {
  identity: string;
}

// A WeakMap rather than a property: generated code binds module exports it does not own.
const bindings = new WeakMap<Function, string>();

/** For generated code only; not public API. */
export function __flueBindAgentModule(fn: Function, binding: AgentIdentityBinding): void {
  if (typeof fn !== 'function') {
    throw new Error('[flue] __flueBindAgentModule expects an agent function.');
  }
  const identity = binding?.identity;
  assertIdentity(identity, 'build-stamped identity');
  const existing = bindings.get(fn);
  if (existing === undefined) {
    bindings.set(fn, identity);
  } else if (existing !== identity) {
    throw new Error(`[flue] Agent function is already bound to identity "${existing}" and cannot be rebound to "${identity}".`);
  }
}

/**
 * Order: explicit name (a `start()` `{ agent, name }` entry), build binding, `agentName` static,
 * `fn.name`. Never position: reordering a list must not move an agent's storage.
 */
export function resolveAgentIdentity(fn: Agent, explicitName?: string): string {
  if (typeof fn !== 'function') {
    throw new Error('[flue] An agent must be a function.');
  }
  if (explicitName !== undefined) {
    assertIdentity(explicitName, 'agent entry name');
    return explicitName;
  }
  const bound = bindings.get(fn);
  if (bound !== undefined) return bound;
  const agentName: unknown = fn.agentName;
  if (agentName !== undefined) {
    assertIdentity(agentName, 'agentName static');
    return agentName;
  }
  // An anonymous default export reports its name as "default", which is not a chosen name.
  if (fn.name === '' || fn.name === 'default') {
    // A Worker has no start(): the build names agents after their exports.
    const viaStart = hostKind() === 'cloudflare' ? '' : 'register it as { agent, name } in start(), ';
    throw new Error(
      '[flue] Cannot resolve the identity of an anonymous agent function. Give it a name: ' +
        `set the agentName static (Fn.agentName = 'my-agent'), ${viaStart}` +
        'or declare it as a named function (function MyAgent() { … }).',
    );
  }
  assertIdentity(fn.name, 'function name');
  return fn.name;
}

export interface AgentRegistration {
  identity: string;
  agent: Agent;
}

/** The agents one app (or one `start()`) can address. */
export class AgentRegistry {
  readonly #byIdentity = new Map<string, Agent>();
  readonly #byFunction = new Map<Agent, string>();
  /** Earlier identities of registered agents, resolved by `get` only (see `alias`). */
  readonly #aliases = new Map<string, Agent>();

  /**
   * Registering the same function under the same identity again is a no-op (a module re-exported
   * by another 'use agent' module registers twice); any other overlap throws.
   */
  register(fn: Agent, name?: string): string {
    const identity = resolveAgentIdentity(fn, name);
    const existing = this.#byFunction.get(fn);
    if (existing !== undefined && existing !== identity) {
      throw new Error(`[flue] The same agent function is registered under two identities: "${existing}" and "${identity}".`);
    }
    const holder = this.get(identity);
    if (holder !== undefined && holder !== fn) {
      throw new Error(
        `[flue] Duplicate agent identity "${identity}": two different agent functions resolve to it. ` +
          'Give one of them another agentName or entry name.',
      );
    }
    this.#byIdentity.set(identity, fn);
    this.#byFunction.set(fn, identity);
    return identity;
  }

  /**
   * The contract checks that need no render: an async function (its promise would only surface
   * at the first render, after the input was stored) and the `durability` and `budget` statics. Admission runs
   * them for every delivery, so a broken agent rejects the send itself with a typed error, while
   * the app's other agents keep working.
   */
  assertDefinition(identity: string): void {
    const fn = this.get(identity);
    if (fn === undefined) return;
    if (isAsyncFunction(fn)) throw asyncAgentError(identity);
    resolveDurability(fn);
    resolveBudget(fn);
  }

  has(fn: unknown): boolean {
    return this.#byFunction.has(fn as Agent);
  }

  identityOf(fn: Agent): string {
    const identity = this.#byFunction.get(fn);
    if (identity === undefined) {
      const name = typeof fn === 'function' && fn.name ? ` "${fn.name}"` : '';
      throw new Error(`[flue] Agent function${name} is not registered in this app. ${registrationHint()}`);
    }
    return identity;
  }

  get(identity: string): Agent | undefined {
    return this.#byIdentity.get(identity) ?? this.#aliases.get(identity);
  }

  /**
   * Resolves `identity`, which no agent holds, to the registered `fn`: storage born under an
   * agent's earlier identity (a Durable Object a `renamed_classes` migration moved to the renamed
   * agent's class) keeps its keys and runs the agent's code. The agent's own identity is unchanged.
   */
  alias(identity: string, fn: Agent): void {
    assertIdentity(identity, 'earlier identity');
    if (!this.#byFunction.has(fn)) throw new Error(`[flue] Cannot alias "${identity}" to an agent function that is not registered.`);
    const holder = this.get(identity);
    if (holder !== undefined && holder !== fn) throw new Error(`[flue] Cannot alias "${identity}": another agent holds that identity.`);
    this.#aliases.set(identity, fn);
  }

  /** In registration order. */
  list(): AgentRegistration[] {
    return [...this.#byIdentity].map(([identity, agent]) => ({ identity, agent }));
  }
}

function assertIdentity(value: unknown, source: string): asserts value is string {
  if (typeof value !== 'string' || !AGENT_IDENTITY_PATTERN.test(value)) {
    const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
    throw new Error(
      `[flue] Invalid agent identity ${shown} (${source}): it must match ${AGENT_IDENTITY_PATTERN} ` +
        '(PascalCase or kebab-case, starting with a letter, no ":").',
    );
  }
}

/** `async function` and `async () =>` (and async generators): their constructor says so. */
export function isAsyncFunction(fn: Function): boolean {
  const name = Object.getPrototypeOf(fn)?.constructor?.name;
  return name === 'AsyncFunction' || name === 'AsyncGeneratorFunction';
}
