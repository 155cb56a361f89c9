/** `@flue/runtime`: the authoring and addressing API of the seeds. */
export {
  useAgentFinish,
  useAgentStart,
  useDataWriter,
  useDelivery,
  useDispatchMessage,
  useInitialData,
  useInstruction,
  useModel,
  usePersistentState,
  useResponseFinish,
  useResponseStart,
  useSkill,
  useSubagent,
  useTool,
  type StateSetter,
  type UseModelOptions,
} from './hooks.ts';
export { useMcpConnection } from './mcp/hook.ts';
export { useSandbox } from './sandbox/hook.ts';
export type {
  AgentFinishContext,
  AgentResponseToolCall,
  AgentStartContext,
  ResponseFinishContext,
  ResponseMetadataCallback,
  ResponseStartContext,
} from './render.ts';
export * from './tool-entry.ts';
export {
  AGENT_IDENTITY_PATTERN,
  __flueBindAgentModule,
  type Agent,
  type AgentFunction,
  type AgentIdentityBinding,
  type AgentProps,
  type AgentStatics,
} from './identity.ts';
export type { DurabilityConfig } from './durability-config.ts';
export {
  dispatch,
  getAgentInstance,
  init,
  type AgentHandleDispatchRequest,
  type AgentInstanceHandle,
  type AgentReadOptions,
  type InitOptions,
} from './addressing.ts';
export { setProvider } from './providers.ts';
// The provider and persistence contracts the seeds' reference names beside these exports.
export type { Provider } from './model-types.ts';
export type { PersistenceAdapter } from './persistence.ts';
export { observe, type FlueEvent, type FlueEventContext, type FlueEventSubscriber, type FlueObservation, type FlueObservationSubscriber } from './events.ts';
export {
  InstrumentationAlreadyInstalledError,
  instrument,
  type FlueAttemptResult,
  type FlueExecutionContext,
  type FlueExecutionInterceptor,
  type FlueExecutionOperation,
  type FlueInstrumentation,
  type FlueToolCallResult,
} from './instrumentation.ts';
export type { ConversationStreamChunk } from './projection.ts';
export type { FlueConversationMessage, FlueConversationPart, FlueConversationSettlement, FlueConversationSnapshot } from './conversation.ts';
export * from './errors.ts';
export type * from './types.ts';
export * from './sandbox/index.ts';
export { GeneralSubagent, defineSubagent, type SubagentDefinition } from './subagents.ts';
export {
  createMcpConnection,
  defineMcpConnection,
  type McpAuth,
  type McpConnection,
  type McpConnectionDefinition,
  type McpTransport,
} from './mcp/index.ts';
export {
  SkillDefinitionValidationError,
  defineSkill,
  type SkillDefinition,
  type SkillReference,
} from './skills/index.ts';
export {
  ChannelRefusedError,
  createChannelRouter,
  type ChannelAdmission,
  type ChannelDeliveries,
  type ChannelDelivery,
  type ChannelRequest,
  type ChannelRouteDefinition,
  type ChannelVerifiedEvent,
} from './channel-router.ts';
