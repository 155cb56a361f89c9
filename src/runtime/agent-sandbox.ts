/**
 * The agent's environment as the response loop sees it: created once per attempt from the
 * `useSandbox()` factory, re-pointed at the declared `cwd`, and offered to the model as the
 * built-in tools (or the factory's own `tools`). Presence is re-read at every turn boundary.
 */
import * as v from 'valibot';
import type { ToolDefinition } from './define-tool.ts';
import type { SandboxDeclaration } from './render.ts';
import { resolvePath } from './sandbox/paths.ts';
import { defaultSandboxTools } from './sandbox/tools.ts';
import type { AgentTool, Sandbox, SandboxFactory } from './sandbox/types.ts';

export class AgentSandbox {
  private created: Promise<Sandbox> | undefined;
  private factory: SandboxFactory | undefined;
  /** The sandbox of the latest turn boundary, or undefined when the latest render declared none. */
  current: Sandbox | undefined;
  /** Built-in tools by name, for the turn whose tool list they were offered in. */
  readonly tools = new Map<string, AgentTool>();

  private readonly instanceId: string;

  constructor(instanceId: string) {
    this.instanceId = instanceId;
  }

  /** Follows the render: creates the sandbox on first declaration, drops it when undeclared. */
  async follow(declaration: SandboxDeclaration | undefined): Promise<void> {
    if (declaration === undefined) {
      this.current = undefined;
      return;
    }
    // The factory is submission-scoped: the first declaration of the attempt is the one that runs.
    this.factory ??= declaration.factory;
    this.created ??= createSandbox(this.factory, this.instanceId);
    const sandbox = await this.created;
    this.current = declaration.cwd === undefined ? sandbox : withCwd(sandbox, declaration.cwd);
  }

  /** Tool definitions for the model's tool list; execution goes through `tools` by name. */
  toolDefinitions(): ToolDefinition[] {
    this.tools.clear();
    if (this.current === undefined) return [];
    const tools = this.factory?.tools?.(this.current, { subagents: {} }) ?? defaultSandboxTools(this.current);
    return tools.map((tool: AgentTool) => {
      this.tools.set(tool.name, tool);
      return {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        input: v.looseObject({}),
        run() {
          throw new Error(`[flue] Built-in tool "${tool.name}" runs through its sandbox, not as a tool definition.`);
        },
      };
    });
  }
}

async function createSandbox(factory: SandboxFactory, id: string): Promise<Sandbox> {
  const legacy = factory as SandboxFactory & { createSessionEnv?: (options: { id: string }) => Promise<Sandbox> };
  return typeof factory.createSandbox === 'function' ? factory.createSandbox({ id }) : legacy.createSessionEnv!({ id });
}

/** The same environment seen from another working directory: relative paths resolve there. */
function withCwd(sandbox: Sandbox, cwd: string): Sandbox {
  const root = sandbox.resolvePath(cwd);
  const at = (p: string) => resolvePath(root, p);
  return {
    cwd: root,
    resolvePath: at,
    exec: (command, options) => sandbox.exec(command, { ...options, cwd: at(options?.cwd ?? '.') }),
    readFile: (p) => sandbox.readFile(at(p)),
    readFileBuffer: (p) => sandbox.readFileBuffer(at(p)),
    writeFile: (p, content) => sandbox.writeFile(at(p), content),
    stat: (p) => sandbox.stat(at(p)),
    readdir: (p) => sandbox.readdir(at(p)),
    exists: (p) => sandbox.exists(at(p)),
    mkdir: (p, options) => sandbox.mkdir(at(p), options),
    rm: (p, options) => sandbox.rm(at(p), options),
  };
}

/** Runs a built-in tool; the model sees its text, and a throw becomes an error result. */
export async function runBuiltinTool(
  tool: AgentTool,
  toolCallId: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<{ isError: boolean; content: string; terminate?: true; durationMs: number }> {
  const started = Date.now();
  try {
    if (signal.aborted) throw new Error('Operation aborted');
    const result = await tool.execute(toolCallId, args, signal);
    const content = result.content.map((part) => (part.type === 'text' ? part.text : `[image ${part.mimeType}]`)).join('\n');
    return { isError: false, content, ...(result.terminate ? { terminate: true as const } : {}), durationMs: Date.now() - started };
  } catch (error) {
    return { isError: true, content: error instanceof Error ? error.message : String(error), durationMs: Date.now() - started };
  }
}
