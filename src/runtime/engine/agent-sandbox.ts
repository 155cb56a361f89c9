/**
 * The agent's environment as the response loop sees it: created once per attempt from the
 * `useSandbox()` factory, re-pointed at the declared `cwd`, and offered to the model as the
 * built-in tools (or the factory's own `tools`). Presence is re-read at every turn boundary.
 *
 * The tools see the sandbox through the packaged-skill overlay (sandbox.md §4): reads under
 * `/.flue/packaged-skills/<skill-id>/` are served from the live skills' bundled files.
 * `harness.sandbox` gets the sandbox itself.
 *
 * The host may hand over the conversation's `SandboxFileStore`; it reaches the factory as a
 * symbol-keyed `createSandbox` option, which `virtualSandbox()` uses to keep its files durable.
 */
import * as v from 'valibot';
import type { ToolDefinition } from '../authoring/define-tool.ts';
import type { SandboxDeclaration } from '../authoring/render.ts';
import { type CreateSandboxHostOptions, SANDBOX_FILE_STORE, type SandboxFileStore } from '../sandbox/file-store.ts';
import { resolvePath } from '../sandbox/paths.ts';
import { raceToolRun } from '../tools/tool-runner.ts';
import type { AgentTool, Sandbox, SandboxFactory } from '../sandbox/types.ts';
import type { SkillReference } from '../skills/define-skill.ts';
import type { SubagentDefinition } from '../authoring/subagents.ts';
import { PACKAGED_SKILLS_ROOT, packagedFileBytes, packagedFileText, resolvePackagedSkillFile } from '../skills/package.ts';

export class AgentSandbox {
  private created: Promise<Sandbox> | undefined;
  private factory: SandboxFactory | undefined;
  private builtins: SandboxDeclaration['builtinTools'] | undefined;
  /** The sandbox of the latest turn boundary (see `current`). */
  private own: Sandbox | undefined;
  /** Built-in tools by name, for the turn whose tool list they were offered in. */
  readonly tools = new Map<string, AgentTool>();
  /** The packaged skills of the latest render, served by the overlay. */
  private skills: readonly SkillReference[] = [];
  private readonly overlays = new WeakMap<Sandbox, Sandbox>();
  private scoped: { cwd: string; sandbox: Sandbox } | undefined;
  private offered: { sandbox: Sandbox; subagents: string; definitions: ToolDefinition[] } | undefined;
  /** Set on a view made by `at()`: the environment it re-points, and where. */
  private readonly base: { parent: AgentSandbox; cwd: string } | undefined;
  private rebased: { from: Sandbox; sandbox: Sandbox } | undefined;

  private readonly instanceId: string;
  private readonly fileStore: SandboxFileStore | undefined;

  constructor(instanceId: string, fileStore?: SandboxFileStore, base?: { parent: AgentSandbox; cwd: string }) {
    this.instanceId = instanceId;
    this.fileStore = fileStore;
    this.base = base;
  }

  /**
   * The sandbox of the latest turn boundary, or undefined when the latest render declared none. A
   * view made by `at()` shows its parent's current sandbox re-pointed at the view's directory.
   */
  get current(): Sandbox | undefined {
    if (this.base === undefined) return this.own;
    const from = this.base.parent.current;
    if (from === undefined) return undefined;
    if (this.rebased?.from !== from) this.rebased = { from, sandbox: withCwd(from, this.base.cwd) };
    return this.rebased.sandbox;
  }

  /**
   * The same environment seen from another working directory (a `task` call's `cwd`): it follows
   * this environment (presence, swaps, packaged skills, the factory's own tools) and never
   * follows a render itself. `cwd` should be absolute; a relative one resolves against the
   * current sandbox's cwd whenever it is (re)applied.
   */
  at(cwd: string): AgentSandbox {
    return new AgentSandbox(this.instanceId, this.fileStore, { parent: this, cwd });
  }

  private get toolFactory(): SandboxFactory | undefined {
    return this.base === undefined ? this.factory : this.base.parent.toolFactory;
  }

  private get builtinTools(): SandboxDeclaration['builtinTools'] | undefined {
    return this.base === undefined ? this.builtins : this.base.parent.builtinTools;
  }

  private get liveSkills(): readonly SkillReference[] {
    return this.base === undefined ? this.skills : this.base.parent.liveSkills;
  }

  /**
   * Follows the render: creates the sandbox on first declaration, drops it when undeclared.
   * `skills` (the render's packaged skills) feed the overlay; omitted, the previous ones stay.
   */
  async follow(declaration: SandboxDeclaration | undefined, skills?: readonly SkillReference[]): Promise<void> {
    if (this.base !== undefined) throw new Error('[flue] A re-pointed environment follows its parent, not a render.');
    if (skills !== undefined) this.skills = skills;
    if (declaration === undefined) {
      this.own = undefined;
      return;
    }
    // The factory is submission-scoped: the first declaration of the attempt is the one that runs.
    this.factory ??= declaration.factory;
    this.builtins ??= declaration.builtinTools;
    this.created ??= createSandbox(this.factory, this.instanceId, this.fileStore);
    const sandbox = await this.created;
    if (declaration.cwd === undefined) this.own = sandbox;
    else {
      // One wrapper per cwd, so per-sandbox caches (write locks) hold across turns.
      if (this.scoped?.cwd !== declaration.cwd) this.scoped = { cwd: declaration.cwd, sandbox: withCwd(sandbox, declaration.cwd) };
      this.own = this.scoped.sandbox;
    }
  }

  /**
   * Tool definitions for the model's tool list; execution goes through `tools` by name. Built once
   * per sandbox and set of subagent names, so every turn offers the same definition objects (and
   * their schemas stay cached). A factory's `tools` sees the render's subagents by name.
   */
  toolDefinitions(subagents: readonly SubagentDefinition[]): ToolDefinition[] {
    const current = this.current;
    if (current === undefined) {
      this.tools.clear();
      return [];
    }
    const names = subagents.map((subagent) => subagent.name).join('\n');
    if (this.offered?.sandbox === current && this.offered.subagents === names) return this.offered.definitions;
    this.tools.clear();
    const overlay = this.overlay(current);
    const byName = Object.fromEntries(subagents.map((subagent) => [subagent.name, subagent]));
    const tools = this.toolFactory?.tools?.(overlay, { subagents: byName }) ?? this.builtinTools?.(overlay) ?? [];
    const definitions = tools.map((tool: AgentTool): ToolDefinition => {
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
    this.offered = { sandbox: current, subagents: names, definitions };
    return definitions;
  }

  /** The sandbox as the tools see it; one overlay per sandbox, reading the live skills. */
  private overlay(sandbox: Sandbox): Sandbox {
    let overlay = this.overlays.get(sandbox);
    if (overlay === undefined) {
      overlay = withPackagedSkills(sandbox, () => this.liveSkills);
      this.overlays.set(sandbox, overlay);
    }
    return overlay;
  }
}

async function createSandbox(factory: SandboxFactory, id: string, fileStore: SandboxFileStore | undefined): Promise<Sandbox> {
  const options: CreateSandboxHostOptions = fileStore === undefined ? { id } : { id, [SANDBOX_FILE_STORE]: fileStore };
  const legacy = factory as SandboxFactory & { createSessionEnv?: (options: { id: string }) => Promise<Sandbox> };
  return typeof factory.createSandbox === 'function' ? factory.createSandbox(options) : legacy.createSessionEnv!(options);
}

const PACKAGED_SKILLS_DIR = PACKAGED_SKILLS_ROOT.slice(0, -1);

/**
 * The packaged-skill overlay: `readFile`/`readFileBuffer` under
 * `/.flue/packaged-skills/` are served from the bundled skill files (binary as base64 text wrapped
 * at 76 characters for `readFile`) and never reach the adapter; writes there are refused (the
 * files are read-only); `exec`, `stat`, `readdir` and `exists` pass through, so the files are
 * invisible to the shell.
 */
export function withPackagedSkills(sandbox: Sandbox, skills: () => readonly SkillReference[]): Sandbox {
  const packaged = (p: string): string | undefined => {
    const resolved = sandbox.resolvePath(p);
    return resolved === PACKAGED_SKILLS_DIR || resolved.startsWith(PACKAGED_SKILLS_ROOT) ? resolved : undefined;
  };
  const find = (path: string) => {
    const found = resolvePackagedSkillFile(skills(), path);
    if (found === undefined) throw new Error(`[flue] Packaged skill file not found: ${path}`);
    return found.file;
  };
  const readOnly = (path: string): never => {
    throw new Error(`[flue] Packaged skill files are read-only: ${path}`);
  };
  return {
    get cwd() {
      return sandbox.cwd;
    },
    resolvePath: (p) => sandbox.resolvePath(p),
    exec: (command, options) => sandbox.exec(command, options),
    async readFile(p) {
      const path = packaged(p);
      return path === undefined ? sandbox.readFile(p) : packagedFileText(find(path));
    },
    async readFileBuffer(p) {
      const path = packaged(p);
      return path === undefined ? sandbox.readFileBuffer(p) : packagedFileBytes(find(path));
    },
    async writeFile(p, content) {
      const path = packaged(p);
      return path === undefined ? sandbox.writeFile(p, content) : readOnly(path);
    },
    stat: (p) => sandbox.stat(p),
    readdir: (p) => sandbox.readdir(p),
    exists: (p) => sandbox.exists(p),
    async mkdir(p, options) {
      const path = packaged(p);
      return path === undefined ? sandbox.mkdir(p, options) : readOnly(path);
    },
    async rm(p, options) {
      const path = packaged(p);
      return path === undefined ? sandbox.rm(p, options) : readOnly(path);
    },
  };
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
    // Raced like a `defineTool` run: a sandbox call that never answers must not outlive the
    // attempt's abort (the submission's deadline, a stop or an abort).
    const result = await raceToolRun((scoped) => tool.execute(toolCallId, args, scoped), {
      label: `Tool "${tool.name}"`,
      signal,
      timeoutError: () => undefined,
    });
    const content = result.content.map((part) => (part.type === 'text' ? part.text : `[image ${part.mimeType}]`)).join('\n');
    return { isError: false, content, ...(result.terminate ? { terminate: true as const } : {}), durationMs: Date.now() - started };
  } catch (error) {
    return { isError: true, content: error instanceof Error ? error.message : String(error), durationMs: Date.now() - started };
  }
}
