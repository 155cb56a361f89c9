/** `@flue/runtime/cloudflare`: the Cloudflare target (generated code and Cloudflare-only helpers). */
export { FlueAgentDurableObject, createFlueAgentClass, extend, type CloudflareExtension } from './agent-object.ts';
export { configureFlueWorker, type FlueAgentEntry } from './worker-config.ts';
export { withLoadedApi } from '../runtime/model/providers.ts';
export { createFlueWorkerHandlers } from './worker-handlers.ts';
export {
  getCloudflareContext,
  getDurableObjectIdentity,
  type CloudflareContext,
  type DurableObjectIdentity,
} from './context.ts';
export {
  cloudflareBindingProvider,
  type CloudflareBindingProviderOptions,
  type WorkersAIBinding,
} from './workers-ai-provider.ts';
export { CloudflareAIBindingError, type CloudflareAIBindingErrorReason } from '../runtime/common/errors.ts';
