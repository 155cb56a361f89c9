/** `@flue/runtime`: the authoring and addressing API of Flue. */
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
} from './authoring/hooks.ts';
export { useMcpConnection } from './mcp/hook.ts';
export { useSandbox } from './sandbox/hook.ts';
export type {
  AgentFinishContext,
  AgentResponseToolCall,
  AgentStartContext,
  ResponseFinishContext,
  ResponseMetadataCallback,
  ResponseStartContext,
} from './authoring/render.ts';
export { __flueEnterAgent } from './authoring/render.ts';
export * from './tool-entry.ts';
export {
  AGENT_IDENTITY_PATTERN,
  __flueBindAgentModule,
  type Agent,
  type AgentFunction,
  type AgentIdentityBinding,
  type AgentProps,
  type AgentStatics,
} from './authoring/identity.ts';
export type { DurabilityConfig } from './authoring/durability-config.ts';
export {
  dispatch,
  getAgentInstance,
  init,
  type AgentHandleDispatchRequest,
  type AgentInstanceHandle,
  type AgentReadOptions,
  type InitOptions,
} from './host/addressing.ts';
export { setProvider } from './model/providers.ts';
// The provider and persistence contracts the seeds' reference names beside these exports.
export type { Provider } from './model/model-types.ts';
export type { PersistenceAdapter } from './store/persistence.ts';
export { observe, type FlueEvent, type FlueEventContext, type FlueEventSubscriber, type FlueObservation, type FlueObservationSubscriber } from './common/events.ts';
export {
  InstrumentationAlreadyInstalledError,
  instrument,
  type FlueAttemptResult,
  type FlueExecutionContext,
  type FlueExecutionInterceptor,
  type FlueExecutionOperation,
  type FlueInstrumentation,
  type FlueToolCallResult,
} from './common/instrumentation.ts';
export type { ConversationStreamChunk } from './engine/projection.ts';
export type { FlueConversationMessage, FlueConversationPart, FlueConversationSettlement, FlueConversationSnapshot } from './engine/conversation.ts';
export * from './common/errors.ts';
export type * from './common/types.ts';
export * from './sandbox/index.ts';
export { GeneralSubagent, defineSubagent, type SubagentDefinition } from './authoring/subagents.ts';
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
  type ChannelHandlerRoute,
  type ChannelRouteDefinition,
  type ChannelVerifiedEvent,
  type ChannelVerifiedRoute,
} from './http/channel-router.ts';
