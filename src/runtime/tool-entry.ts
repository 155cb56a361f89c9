/** `@flue/runtime/tool`: the light entry for tool-only modules. */
export {
  defineTool,
  type McpToolAnnotations,
  type ToolContext,
  type ToolDefinition,
  type ToolInputSchema,
  type ToolOutputSchema,
  type ToolInput,
  type ToolOutput,
  type ToolRunEnvelope,
  type ToolStep,
} from './authoring/define-tool.ts';
