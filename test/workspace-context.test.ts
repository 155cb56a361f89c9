/**
 * Workspace context on Node: an agent with a sandbox discovers `AGENTS.md` and
 * `.agents/skills/<dir>/SKILL.md` in its working directory (useSandbox's `cwd`, a task's `cwd`),
 * through the sandbox's own file verbs — the virtual sandbox and `local()` alike. The Cloudflare
 * side is test/workers/workspace-context.test.ts.
 */
import { afterEach, expect, test, vi } from 'vitest';
import * as v from 'valibot';
import {
  AgentRunError,
  GeneralSubagent,
  defineSkill,
  defineTool,
  init,
  useTool,
  useModel,
  useSandbox,
  useSkill,
  useSubagent,
  virtualSandbox,
} from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();
afterEach(() => vi.restoreAllMocks());

const skillMd = (name: string, description: string, body: string) => `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

const repo = {
  '/repo/AGENTS.md': 'Run `npm test` before you say you are done.',
  '/repo/.agents/skills/release-notes/SKILL.md': skillMd(
    'release-notes',
    'Write release notes from the changelog.',
    'Read CHANGELOG.md and summarize it.',
  ),
  '/repo/.agents/skills/broken/SKILL.md': 'no frontmatter here',
  '/repo/.agents/skills/empty-dir/notes.txt': 'not a skill',
  '/repo/pkg/AGENTS.md': 'This package is frozen: change nothing in it.',
  '/repo/pkg/.agents/skills/pkg-audit/SKILL.md': skillMd('pkg-audit', 'Audit the package.', 'List every file.'),
  '/workspace/AGENTS.md': 'You are at the default cwd.',
};

test('useSandbox(factory, { cwd }) discovers AGENTS.md and workspace skills there; activate_skill loads them', async () => {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
  function Maintainer() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(virtualSandbox({ files: repo }), { cwd: '/repo' });
    return 'You maintain the repository.';
  }
  await ctx.start([Maintainer]);
  ctx.server.script({ toolCalls: [{ name: 'activate_skill', arguments: { name: 'release-notes' } }] }, { text: 'Following it.' });
  const handle = init(Maintainer, { id: 'ws-1' });
  expect((await handle.read(await handle.dispatch('Write the notes.'))).text).toBe('Following it.');

  const system = ctx.server.requests[0]!.system!;
  expect(system.startsWith('You maintain the repository.\n\n## Workspace Instructions\n\n')).toBe(true);
  expect(system).toContain('Instructions from /repo/AGENTS.md:\n\nRun `npm test` before you say you are done.');
  expect(system).not.toContain('You are at the default cwd.');
  expect(system).not.toContain('This package is frozen');
  expect(system).toContain('## Available Skills');
  expect(system).toContain('- **release-notes** — Write release notes from the changelog.');
  expect(system).not.toContain('pkg-audit');
  expect(ctx.server.requests[0]!.tools.map((t) => t.name)).toContain('activate_skill');

  const activation = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(activation.isError).toBe(false);
  expect(activation.content).toContain('Run the skill named "release-notes".\n\n<skill_instructions>\nRead CHANGELOG.md and summarize it.');
  expect(activation.content).toContain('/repo/.agents/skills/release-notes');
  // The invalid SKILL.md is skipped with a warning naming it; the agent still runs.
  expect(warn.mock.calls.map((call) => String(call[0])).some((line) => line.includes('/repo/.agents/skills/broken'))).toBe(true);
});

test('a task with a cwd gives the delegate the workspace context of that directory, not the parent one', async () => {
  function Lead() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(virtualSandbox({ files: repo }), { cwd: '/repo' });
    useSubagent(GeneralSubagent);
    return 'You lead.';
  }
  await ctx.start([Lead]);
  ctx.server.script(
    { toolCalls: [{ name: 'task', arguments: { agent: 'flue-general', prompt: 'Audit the package.', cwd: 'pkg' } }] },
    { toolCalls: [{ name: 'activate_skill', arguments: { name: 'pkg-audit' } }] }, // the delegate
    { text: 'Audited.' },
    { text: 'The package is audited.' },
  );
  const handle = init(Lead, { id: 'ws-2' });
  expect((await handle.read(await handle.dispatch('Audit pkg.'))).text).toBe('The package is audited.');

  const delegate = ctx.server.requests[1]!;
  expect(delegate.system).toContain('Instructions from /repo/pkg/AGENTS.md:\n\nThis package is frozen: change nothing in it.');
  expect(delegate.system).not.toContain('Run `npm test`');
  expect(delegate.system).toContain('- **pkg-audit** — Audit the package.');
  expect(delegate.system).not.toContain('release-notes');
  expect(ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!.content).toContain(
    '<skill_instructions>\nList every file.',
  );
  // The parent keeps its own context.
  expect(ctx.server.requests[3]!.system).toContain('Run `npm test`');
});

test('local() on Node: AGENTS.md and workspace skills come from the directory on disk', async () => {
  const { local } = await import('@flue/runtime/node');
  const { mkdtempSync, mkdirSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const root = mkdtempSync(join(tmpdir(), 'flue-ws-'));
  writeFileSync(join(root, 'AGENTS.md'), 'Prefer small commits.');
  mkdirSync(join(root, '.agents', 'skills', 'triage'), { recursive: true });
  writeFileSync(join(root, '.agents', 'skills', 'triage', 'SKILL.md'), skillMd('triage', 'Triage incoming issues.', 'Label each issue.'));
  function OnDisk() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(local({ cwd: root }));
    return 'Work on disk.';
  }
  await ctx.start([OnDisk]);
  ctx.server.script({ text: 'ok' });
  const handle = init(OnDisk, { id: 'ws-3' });
  await handle.read(await handle.dispatch('go'));
  const system = ctx.server.requests[0]!.system!;
  expect(system).toContain('Prefer small commits.');
  expect(system).toContain('- **triage** — Triage incoming issues.');
});

test('without a sandbox nothing is discovered', async () => {
  function Bare() {
    useModel('anthropic/claude-haiku-4-5');
    return 'Bare.';
  }
  await ctx.start([Bare]);
  ctx.server.script({ text: 'hi' });
  const handle = init(Bare, { id: 'ws-4' });
  await handle.read(await handle.dispatch('go'));
  expect(ctx.server.requests[0]!.system).not.toContain('## Workspace Instructions');
  expect(ctx.server.requests[0]!.system).not.toContain('## Available Skills');
});

test('a workspace skill named like a declared one fails the submission before any model call', async () => {
  const declared = defineSkill({ name: 'release-notes', description: 'Declared.', instructions: 'Declared body.' });
  function Clash() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(virtualSandbox({ files: repo }), { cwd: '/repo' });
    useSkill(declared);
    return 'Clash.';
  }
  await ctx.start([Clash]);
  const clash = init(Clash, { id: 'ws-5' });
  const failed = await clash.read(await clash.dispatch('go')).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(AgentRunError);
  expect((failed as AgentRunError).cause).toMatchObject({ type: 'skill_definition_validation' });
  expect((failed as Error).message).toContain('skill "release-notes" is mounted twice');
  expect(ctx.server.requests).toHaveLength(0);
});

test('a harness prompt sees the workspace context of the turn that called its tool', async () => {
  const consult = defineTool({
    name: 'consult',
    description: 'Ask a scratch conversation.',
    input: v.object({}),
    harness: true,
    async run({ harness }) {
      return (await harness.prompt('What do the maintainers ask?')).text;
    },
  });
  function Consultant() {
    useModel('anthropic/claude-haiku-4-5');
    useSandbox(virtualSandbox({ files: repo }), { cwd: '/repo' });
    useTool(consult);
    return 'Consult.';
  }
  await ctx.start([Consultant]);
  ctx.server.script({ toolCalls: [{ name: 'consult', arguments: {} }] }, { text: 'Run npm test.' }, { text: 'They ask for npm test.' });
  const handle = init(Consultant, { id: 'ws-6' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('They ask for npm test.');
  const scratch = ctx.server.requests[1]!;
  expect(scratch.system).toContain('Instructions from /repo/AGENTS.md:\n\nRun `npm test` before you say you are done.');
  expect(scratch.system).toContain('- **release-notes** — Write release notes from the changelog.');
});
