/**
 * Interop test support: a minimal headless hook host, so `useFlueAgent()` from the unmodified
 * `@flue/react` runs in Node without a browser or a renderer package.
 *
 * Only `react` is installed (as @flue/react's peer); neither react-dom nor a test renderer is. A
 * hook call in `react` resolves its dispatcher from React's shared internals (`.H`), which a
 * renderer installs while it renders a component. This host installs its own dispatcher the same
 * way and implements the hooks @flue/react 2.0.3 uses — useMemo, useEffect, useSyncExternalStore
 * (plus useCallback/useRef for safety) — with React's semantics for them: memo by deps
 * (Object.is), effects after the render with cleanup before re-run and on unmount, store
 * subscription after the render and a re-render whenever the snapshot changes. Anything else
 * throws, so a future @flue/react that needs more fails loudly instead of misbehaving.
 */
import { createRequire } from 'node:module';

interface Internals {
  H: unknown;
}

const require = createRequire(import.meta.url);
// The same CommonJS module instance @flue/react's `import ... from 'react'` gets (Node shares the
// require cache between ESM imports of CJS and require()).
const React = require('react') as { version: string; __CLIENT_INTERNALS_DO_NOT_USE_OR_WARN_USERS_THEY_CANNOT_UPGRADE: Internals };
const internals = React.__CLIENT_INTERNALS_DO_NOT_USE_OR_WARN_USERS_THEY_CANNOT_UPGRADE;

export const reactVersion = React.version;

type Deps = readonly unknown[] | undefined;

interface MemoSlot {
  kind: 'memo';
  deps: Deps;
  value: unknown;
}
interface RefSlot {
  kind: 'ref';
  value: { current: unknown };
}
interface EffectSlot {
  kind: 'effect';
  deps: Deps;
  cleanup?: () => void;
  pending?: () => void | (() => void);
}
interface StoreSlot {
  kind: 'store';
  subscribe?: (onChange: () => void) => () => void;
  unsubscribe?: () => void;
  getSnapshot: () => unknown;
  value: unknown;
}
type Slot = MemoSlot | RefSlot | EffectSlot | StoreSlot;

function sameDeps(a: Deps, b: Deps): boolean {
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  return a.every((value, i) => Object.is(value, b[i]));
}

export interface HookHost<T> {
  /** The hook's latest return value. */
  readonly current: T;
  /** Renders so far. */
  readonly renders: number;
  /** Resolves with the first result (current or after a re-render) that satisfies `predicate`. */
  until(predicate: (result: T) => boolean, timeoutMs?: number, what?: string): Promise<T>;
  unmount(): void;
}

export function renderHook<T>(hook: () => T): HookHost<T> {
  const slots: Slot[] = [];
  let cursor = 0;
  let result!: T;
  let renders = 0;
  let mounted = true;
  let scheduled = false;
  const waiters = new Set<() => void>();

  const slot = <S extends Slot>(kind: S['kind'], init: () => S): S => {
    const index = cursor++;
    const existing = slots[index];
    if (existing === undefined) return (slots[index] = init());
    if (existing.kind !== kind) throw new Error(`hook host: hook order changed at slot ${index} (${existing.kind} → ${kind})`);
    return existing as S;
  };

  const dispatcher = new Proxy(
    {
      useMemo(create: () => unknown, deps: Deps) {
        const s = slot<MemoSlot>('memo', () => ({ kind: 'memo', deps: undefined, value: undefined }));
        if (renders === 0 || !sameDeps(s.deps, deps)) {
          s.value = create();
          s.deps = deps;
        }
        return s.value;
      },
      useCallback(callback: unknown, deps: Deps) {
        const s = slot<MemoSlot>('memo', () => ({ kind: 'memo', deps: undefined, value: undefined }));
        if (renders === 0 || !sameDeps(s.deps, deps)) {
          s.value = callback;
          s.deps = deps;
        }
        return s.value;
      },
      useRef(initial: unknown) {
        return slot<RefSlot>('ref', () => ({ kind: 'ref', value: { current: initial } })).value;
      },
      useEffect(effect: () => void | (() => void), deps: Deps) {
        const s = slot<EffectSlot>('effect', () => ({ kind: 'effect', deps: undefined }));
        if (renders === 0 || !sameDeps(s.deps, deps)) {
          s.deps = deps;
          s.pending = effect;
        }
      },
      useSyncExternalStore(subscribe: (onChange: () => void) => () => void, getSnapshot: () => unknown) {
        const s = slot<StoreSlot>('store', () => ({ kind: 'store', getSnapshot, value: undefined }));
        if (s.subscribe !== subscribe) {
          s.unsubscribe?.();
          s.unsubscribe = undefined;
          s.subscribe = subscribe;
        }
        s.getSnapshot = getSnapshot;
        s.value = getSnapshot();
        return s.value;
      },
      useDebugValue() {},
    },
    {
      get(target, name) {
        if (name in target) return target[name as keyof typeof target];
        if (typeof name === 'symbol') return undefined;
        return () => {
          throw new Error(`hook host: ${String(name)} is not implemented (add it to test/interop/support/react-hooks.ts)`);
        };
      },
    },
  );

  const scheduleRender = () => {
    if (scheduled || !mounted) return;
    scheduled = true;
    queueMicrotask(() => {
      scheduled = false;
      if (mounted) render();
    });
  };

  function render(): void {
    cursor = 0;
    const previous = internals.H;
    internals.H = dispatcher;
    try {
      result = hook();
    } finally {
      internals.H = previous;
    }
    renders++;
    // Commit: subscribe stores, then run effects (cleanup first), as React does after a render.
    for (const s of slots) {
      if (s.kind === 'store' && s.unsubscribe === undefined && s.subscribe !== undefined) {
        const store = s;
        store.unsubscribe = store.subscribe!(() => {
          if (!Object.is(store.getSnapshot(), store.value)) scheduleRender();
        });
        if (!Object.is(store.getSnapshot(), store.value)) scheduleRender();
      }
    }
    for (const s of slots) {
      if (s.kind === 'effect' && s.pending !== undefined) {
        const effect = s.pending;
        s.pending = undefined;
        s.cleanup?.();
        const cleanup = effect();
        s.cleanup = typeof cleanup === 'function' ? cleanup : undefined;
      }
    }
    for (const waiter of [...waiters]) waiter();
  }

  render();

  return {
    get current() {
      return result;
    },
    get renders() {
      return renders;
    },
    until(predicate, timeoutMs = 15_000, what = 'condition') {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(result)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(result);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `hook host: timed out after ${timeoutMs} ms waiting for ${what}; last result ${JSON.stringify(result).slice(0, 400)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    unmount() {
      if (!mounted) return;
      mounted = false;
      for (const s of slots) {
        if (s.kind === 'effect') s.cleanup?.();
        if (s.kind === 'store') s.unsubscribe?.();
      }
    },
  };
}
