/** Public surface of the sandbox layer (re-exported from `@flue/runtime` by the lead). */
export type {
  AgentTool,
  AgentToolContent,
  AgentToolResult,
  BashLike,
  BashLikeFs,
  ExecOptions,
  FileStat,
  JsonSchemaObject,
  MkdirOptions,
  OrphanedExecSettlement,
  RmOptions,
  Sandbox,
  SandboxDriver,
  SandboxFactory,
  SandboxFromDriverOptions,
  SandboxSubagentDefinition,
  SandboxToolFactory,
  SandboxToolFactoryOptions,
  ShellResult,
} from './types.ts';
export { SandboxDiedError, SandboxOperationUnsupportedError } from './errors.ts';
export { resolvePath } from './paths.ts';
export { sandboxFromDriver } from './from-driver.ts';
export { bash } from './bash.ts';
export { createVirtualBash, virtualSandbox, type VirtualCommand, type VirtualSandboxOptions } from './virtual.ts';
export {
  createBashTool,
  createEditTool,
  createGlobTool,
  createGrepTool,
  createReadTool,
  createWriteTool,
  defaultSandboxTools,
  shellQuote,
} from './tools.ts';
