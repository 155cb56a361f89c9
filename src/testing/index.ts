/**
 * `@flue/runtime/testing`: drive the runtime against scripted models over real provider wire
 * formats, and crash it at named points to test recovery (`crashHarness`, Node only).
 *
 * The server half loads node:http only when a server is started, so this entry also imports
 * inside workerd, where code scripts a server started by the Node side (lanes, LANE_ROUTE).
 */

export { scriptedProvider } from './scripted-provider.ts';
export { useScriptedModels } from '../runtime/model/scripted-redirect.ts';
export type { ScriptedApi, ScriptedProviderOptions } from '../runtime/model/scripted-options.ts';
export { LANE_ROUTE, NO_STEP_QUEUED_MESSAGE, startScriptedModelServer } from './scripted-model-server.ts';
export { childConversations, type ChildConversation } from './inspect.ts';
export {
  ReplayDivergenceError,
  ReplayError,
  replayConversation,
  type DivergenceKind,
  type LoggedDelivery,
  type LoggedToolCall,
  type LoggedTurn,
  type ReplayDivergence,
  type ReplayOptions,
  type ReplayReport,
  type ReplayTurnReport,
} from './replay.ts';
export {
  CrashHarnessError,
  CrashPointNotReachedError,
  SimulatedCrashError,
  crashHarness,
  type CrashHarness,
  type CrashHarnessOptions,
  type CrashInfo,
  type CrashPoint,
  type CrashPointDeadline,
  type CrashPointFilter,
  type CrashPointName,
  type CrashReport,
  type SettleOptions,
  type SubmissionReport,
} from './crash-harness.ts';
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
