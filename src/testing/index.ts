/**
 * `@flue/runtime/testing`: drive the runtime against scripted models over real provider wire
 * formats.
 *
 * The server half imports node:http, so this entry is for Node test processes. Code that runs
 * inside workerd must import only `./scripted-provider.ts` (no node:* imports) and reach a
 * server started by the Node side, e.g. in vitest globalSetup.
 */

export { scriptedProvider } from './scripted-provider.ts';
export type { ScriptedApi, ScriptedProviderOptions } from './scripted-provider.ts';
export { NO_STEP_QUEUED_MESSAGE, startScriptedModelServer } from './scripted-model-server.ts';
export type {
  RecordedMessage,
  RecordedRequest,
  RecordedTool,
  RecordedToolCall,
  ScriptedFinishReason,
  ScriptedModelServer,
  ScriptedModelServerOptions,
  ScriptedResponse,
  ScriptedToolCall,
  ScriptedUsage,
  ScriptedWireApi,
  ScriptStep,
} from './scripted-model-server.ts';
