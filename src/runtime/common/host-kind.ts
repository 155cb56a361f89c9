/**
 * Which host runs the runtime, so messages name the API the user actually has: a Worker user has
 * no `start()`, a Node user has no `wrangler secret`. Set by the host bootstrap, cleared on stop;
 * a message raised before any host decided names both.
 */
import { unreachable } from '../../shared/exhaustive.ts';

export type HostKind = 'cloudflare' | 'node';

// A global symbol, so two copies of this module in one process agree.
const SLOT = Symbol.for('flue.hostKind');
type Slot = { [SLOT]?: HostKind };

export function setHostKind(kind: HostKind | undefined): void {
  if (kind === undefined) delete (globalThis as Slot)[SLOT];
  else (globalThis as Slot)[SLOT] = kind;
}

export function hostKind(): HostKind | undefined {
  return (globalThis as Slot)[SLOT];
}

/** The fix for "this agent is not registered", in the words of the current host. */
export function registrationHint(): string {
  const kind = hostKind();
  switch (kind) {
    case 'cloudflare':
      return "Export it from a 'use agent' module under src/agents/, so that flue build generates its Durable Object class.";
    case 'node':
    case undefined:
      return "Register it via start({ agents }) or export it from a 'use agent' module.";
    default:
      return unreachable(kind, 'host kind');
  }
}

/** Where a provider's key variable goes on the current host. */
export function credentialsHint(vars: string): string {
  const kind = hostKind();
  switch (kind) {
    case 'cloudflare':
      return `Set ${vars} (in .dev.vars for flue dev, or the Worker's secrets: wrangler secret put <NAME>)`;
    case 'node':
      return `Set ${vars} (in the environment or the project's .env; in a script, start({ env }))`;
    case undefined:
      return `Set ${vars} (in .dev.vars for flue dev, or the Worker's secrets; on Node, the environment or start({ env }))`;
    default:
      return unreachable(kind, 'host kind');
  }
}
