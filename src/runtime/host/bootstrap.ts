/**
 * The runtime bootstrap both hosts share: the agent registry, model credentials from the env,
 * development mode, and the scripted-model redirect (`FLUE_SCRIPTED_MODEL_URL`). The host then
 * registers its providers and configures its runtime (`serveRuntime`); Node undoes it all on stop.
 */
import { type DevModeDecision, devModeFromEnv, setDevMode, setDevServerFromEnv } from '../common/dev-mode.ts';
import { type HostKind, setHostKind } from '../common/host-kind.ts';
import { AgentRegistry } from '../authoring/identity.ts';
import { configureModelAuthEnv, redirectModels } from '../model/model-registry.ts';
import { type FlueRuntime, clearRuntime, configureRuntime } from './runtime.ts';
import { useScriptedModels } from '../model/scripted-redirect.ts';

export interface BootstrapOptions {
  env: Record<string, unknown>;
  /** Registers the host's agents; it runs first, so a bad entry fails before anything is set. */
  register(registry: AgentRegistry): void;
  /** Development mode when the env does not say (`FLUE_DEV`); a function decides on first use. */
  devDefault: DevModeDecision;
  /** Which API messages name (`start()` on Node, the build's Worker on Cloudflare). */
  host: HostKind;
}

export function bootstrapRuntime(options: BootstrapOptions): AgentRegistry {
  const registry = new AgentRegistry();
  options.register(registry);
  const { env } = options;
  configureModelAuthEnv(env as Record<string, string | undefined>);
  setDevMode(devModeFromEnv(env, options.devDefault));
  setDevServerFromEnv(env);
  setHostKind(options.host);
  const scripted = env.FLUE_SCRIPTED_MODEL_URL;
  if (typeof scripted === 'string' && scripted !== '') useScriptedModels(scripted);
  return registry;
}

/** Makes `runtime` the one `dispatch()`, `init()` and the routers use in this process or isolate. */
export function serveRuntime(runtime: FlueRuntime): void {
  configureRuntime(runtime);
}

/** Undoes `bootstrapRuntime` and `serveRuntime` (Node's `stop()`). */
export function releaseRuntime(runtime: FlueRuntime): void {
  clearRuntime(runtime);
  redirectModels(undefined);
  setDevMode(undefined);
  setDevServerFromEnv(undefined);
  setHostKind(undefined);
}
