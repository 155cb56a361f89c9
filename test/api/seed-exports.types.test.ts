/**
 * Every type name the seeds' code and reference signatures use resolves from the entry the seeds
 * import it from, checked by `npx tsc --noEmit` (seed code must compile against this package
 * unchanged). vitest only loads the file; the checks below are type-level.
 */
import { describe, expectTypeOf, it } from 'vitest';
import * as v from 'valibot';
import type {
  Agent,
  AgentDefinitionError,
  AgentDispatchRequest,
  AgentFunction,
  AgentHandleDispatchRequest,
  AgentInstanceHandle,
  AgentInstanceInfo,
  AgentProps,
  AgentReadOptions,
  AgentReply,
  AgentRunError,
  AgentStatics,
  CallHandle,
  CompactionConfig,
  ConversationStreamChunk,
  DeliveredAttachment,
  DeliveredMessage,
  DeliveredMessageInput,
  DispatchReceipt,
  DurabilityConfig,
  FlueConversationMessage,
  FlueEvent,
  FlueHarness,
  FlueLogger,
  InitOptions,
  InvalidModelSpecifierError,
  McpAuth,
  McpConnection,
  McpConnectionDefinition,
  McpToolAnnotations,
  McpTransport,
  PersistenceAdapter,
  PromptDocument,
  PromptImage,
  PromptModel,
  PromptOptions,
  PromptResponse,
  PromptResultResponse,
  PromptUsage,
  Provider,
  ProviderNotConfiguredError,
  Sandbox,
  SandboxDriver,
  SandboxFactory,
  SandboxToolFactory,
  SettlementError,
  SkillDefinition,
  SubagentDefinition,
  ThinkingLevel,
  ToolContext,
  ToolDefinition,
  ToolDefinitionError,
  ToolInput,
  ToolInputSchema,
  ToolOutput,
  ToolOutputSchema,
  ToolRunEnvelope,
  ToolStep,
  ToolValidationIssue,
  UnknownModelError,
  ValidationIssue,
} from '@flue/runtime';
import type { ToolInputSchema as LightToolInputSchema, ToolOutputSchema as LightToolOutputSchema } from '@flue/runtime/tool';
import type { Fetchable } from '@flue/runtime/routing';
import type {
  Flue,
  PersistenceAdapter as NodePersistenceAdapter,
  StartAgentConfig,
  StartAgentEntry,
  StartOptions,
} from '@flue/runtime/node';

/** Forces each name to be used, so an unresolved import is a compile error rather than unused. */
type Resolved = [
  Agent,
  AgentDefinitionError,
  AgentDispatchRequest,
  AgentFunction,
  AgentHandleDispatchRequest,
  AgentInstanceHandle,
  AgentInstanceInfo,
  AgentProps,
  AgentReadOptions,
  AgentReply,
  AgentRunError,
  AgentStatics,
  CallHandle<unknown>,
  CompactionConfig,
  ConversationStreamChunk,
  DeliveredAttachment,
  DeliveredMessage,
  DeliveredMessageInput,
  DispatchReceipt,
  DurabilityConfig,
  FlueConversationMessage,
  FlueEvent,
  FlueHarness,
  FlueLogger,
  InitOptions,
  InvalidModelSpecifierError,
  McpAuth,
  McpConnection,
  McpConnectionDefinition,
  McpToolAnnotations,
  McpTransport,
  PersistenceAdapter,
  PromptDocument,
  PromptImage,
  PromptModel,
  PromptOptions,
  PromptResponse,
  PromptResultResponse<unknown>,
  PromptUsage,
  Provider,
  ProviderNotConfiguredError,
  Sandbox,
  SandboxDriver,
  SandboxFactory,
  SandboxToolFactory,
  SettlementError,
  SkillDefinition,
  SubagentDefinition,
  ThinkingLevel,
  ToolContext<undefined, false, false>,
  ToolDefinition,
  ToolDefinitionError,
  ToolInput<ToolDefinition>,
  ToolInputSchema,
  ToolOutput<ToolDefinition>,
  ToolOutputSchema,
  ToolRunEnvelope<unknown>,
  ToolStep,
  ToolValidationIssue,
  UnknownModelError,
  ValidationIssue,
  LightToolInputSchema,
  LightToolOutputSchema,
  Fetchable,
  Flue,
  NodePersistenceAdapter,
  StartAgentConfig,
  StartAgentEntry,
  StartOptions,
];

describe('seed type exports', () => {
  it('resolve from @flue/runtime, /tool, /routing and /node', () => {
    expectTypeOf<Resolved>().toBeArray();
  });

  it('ToolInputSchema accepts the top-level object schemas defineTool takes', () => {
    expectTypeOf(v.object({ orderId: v.string() })).toExtend<ToolInputSchema>();
    expectTypeOf(v.string()).toExtend<ToolOutputSchema>();
    // @ts-expect-error -- tool input must be an object schema
    const notObject: ToolInputSchema = v.string();
    void notObject;
  });

  it('the persistence contract is one type on both entries', () => {
    expectTypeOf<PersistenceAdapter>().toEqualTypeOf<NodePersistenceAdapter>();
  });
});
