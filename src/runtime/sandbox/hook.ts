/**
 * `useSandbox()`, in its own module with the built-in tools it brings, so a Worker whose agents
 * declare no sandbox does not bundle them (the package is `sideEffects: false`).
 */
import { rootFrame } from '../authoring/hooks.ts';
import type { RenderFrame } from '../authoring/render.ts';
import { defaultSandboxTools } from './tools.ts';
import type { SandboxFactory } from './types.ts';

/**
 * Declares the agent's environment. Without it there are no file/shell tools and
 * `harness.sandbox` throws. The factory runs once per attempt; presence is re-read every turn.
 */
export function useSandbox(factory: SandboxFactory, options?: { cwd?: string }): void {
  const frame = rootFrame('useSandbox');
  if (frame.sandbox !== undefined) throw new Error('[flue] useSandbox() was called twice in one render; declare one environment.');
  const valid =
    typeof factory === 'object' &&
    factory !== null &&
    (typeof factory.createSandbox === 'function' || typeof (factory as { createSessionEnv?: unknown }).createSessionEnv === 'function');
  if (!valid) throw new Error('[flue] useSandbox() requires a sandbox factory: an object with createSandbox({ id }).');
  if (factory.tools !== undefined && typeof factory.tools !== 'function') {
    throw new Error('[flue] useSandbox() factory.tools must be a function returning the sandbox tools.');
  }
  const declaration: NonNullable<RenderFrame['sandbox']> = { factory, builtinTools: defaultSandboxTools };
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) throw new Error('[flue] useSandbox() options must be a plain object.');
    for (const key of Object.keys(options)) {
      if (key !== 'cwd') throw new Error(`[flue] useSandbox() got an unknown option "${key}". Known options: cwd.`);
    }
    if (options.cwd !== undefined) {
      if (typeof options.cwd !== 'string' || options.cwd.trim() === '')
        throw new Error('[flue] useSandbox() cwd must be a non-empty string.');
      declaration.cwd = options.cwd;
    }
  }
  frame.sandbox = declaration;
}
