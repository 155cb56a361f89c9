/**
 * Agent identity → generated Durable Object class and binding names (cloudflare.md §2). The class
 * name is the storage identity, so these mappings must never change once shipped.
 */
import { AgentIdentifierCollisionError, DuplicateAgentIdentityError, type IdentityOccurrence } from './build-errors.ts';

/** `Flue<Pascal>Agent`. Pure: callers validate the identity first. */
export function className(identity: string): string {
  return `Flue${pascal(identity)}Agent`;
}

/** `FLUE_<UPPER_SNAKE>_AGENT`. Pure: callers validate the identity first. */
export function bindingName(identity: string): string {
  return `FLUE_${upperSnake(identity)}_AGENT`;
}

// Kebab segments are capitalized; existing capitals are kept (`HTTPProxy` stays `HTTPProxy`).
function pascal(identity: string): string {
  return identity
    .split(/[-_]/)
    .map((part) => (part.length === 0 ? '' : part[0]!.toUpperCase() + part.slice(1)))
    .join('');
}

// Splits only where a lowercase letter or digit meets a capital, so `HTTPProxy` → `HTTPPROXY`
// and `Agent2Go` → `AGENT2_GO`; kebab dashes become underscores.
function upperSnake(identity: string): string {
  return identity
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toUpperCase();
}

/**
 * Fails the build when an identity repeats (`DuplicateAgentIdentityError`) or when distinct
 * identities fold to one class name or one binding name, each checked on its own
 * (`AgentIdentifierCollisionError`). Entries are checked in the order given, so the first
 * conflict reported is deterministic for sorted input.
 */
export function checkIdentityCollisions(entries: readonly (string | IdentityOccurrence)[]): void {
  const occurrences = entries.map((entry) => (typeof entry === 'string' ? { identity: entry } : entry));

  const byIdentity = new Map<string, IdentityOccurrence>();
  for (const occurrence of occurrences) {
    const first = byIdentity.get(occurrence.identity);
    if (first !== undefined) {
      throw new DuplicateAgentIdentityError(occurrence.identity, [location(first), location(occurrence)]);
    }
    byIdentity.set(occurrence.identity, occurrence);
  }

  const byClass = new Map<string, IdentityOccurrence>();
  const byBinding = new Map<string, IdentityOccurrence>();
  for (const occurrence of byIdentity.values()) {
    const cls = className(occurrence.identity);
    const clsFirst = byClass.get(cls);
    if (clsFirst !== undefined) {
      throw new AgentIdentifierCollisionError('class', cls, [clsFirst, occurrence]);
    }
    byClass.set(cls, occurrence);

    const binding = bindingName(occurrence.identity);
    const bindingFirst = byBinding.get(binding);
    if (bindingFirst !== undefined) {
      throw new AgentIdentifierCollisionError('binding', binding, [bindingFirst, occurrence]);
    }
    byBinding.set(binding, occurrence);
  }
}

function location(occurrence: IdentityOccurrence): { file?: string; exportName?: string } {
  return { file: occurrence.file, exportName: occurrence.exportName };
}
