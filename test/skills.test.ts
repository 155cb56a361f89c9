import { expect, test } from 'vitest';
import { SkillDefinitionValidationError, defineSkill, init, useModel, useSkill } from '@flue/runtime';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const release = defineSkill({
  name: 'release-notes',
  description: 'Write release notes from a changelog.',
  instructions: 'Group changes by type. Keep each line short.',
  files: { 'templates/notes.md': '# Release {{version}}' },
});

function Writer() {
  useModel('anthropic/claude-haiku-4-5');
  useSkill(release);
  return 'Write things.';
}

test('a skill is listed in the catalog, activated, and its resource read', async () => {
  await ctx.start([Writer]);
  ctx.server.script(
    { toolCalls: [{ name: 'activate_skill', arguments: { name: 'release-notes' } }] },
    // The model reads the resource by the path activate_skill listed.
    (request) => {
      const listing = request.messages.filter((m) => m.role === 'tool').at(-1)!.content;
      const path = /\/\.flue\/packaged-skills\/\S+\/templates\/notes\.md/.exec(listing)![0];
      return { toolCalls: [{ name: 'read_skill_resource', arguments: { path } }] };
    },
    { text: 'Notes written.' },
  );
  const handle = init(Writer, { id: 'sk-1' });
  expect((await handle.read(await handle.dispatch('Write release notes.'))).text).toBe('Notes written.');
  const first = ctx.server.requests[0]!;
  expect(first.system).toContain('release-notes');
  expect(first.system).toContain('Write release notes from a changelog.');
  expect(first.tools.map((t) => t.name).sort()).toEqual(['activate_skill', 'read_skill_resource', 'task']);
  const activated = ctx.server.requests[1]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(activated.content).toContain('Group changes by type. Keep each line short.');
  expect(activated.content.startsWith('"')).toBe(false);
  const resource = ctx.server.requests[2]!.messages.filter((m) => m.role === 'tool').at(-1)!;
  expect(resource.content).toContain('# Release {{version}}');
});

test('defineSkill rejects an invalid definition with field-level issues', () => {
  let error: unknown;
  try {
    defineSkill({ name: 'Bad Name', description: '', instructions: '' });
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(SkillDefinitionValidationError);
  expect((error as SkillDefinitionValidationError).type).toBe('skill_definition_validation');
  const paths = ((error as SkillDefinitionValidationError).meta!.issues as { path?: unknown[] }[]).map((issue) => String(issue.path?.[0]));
  expect(paths).toEqual(expect.arrayContaining(['name', 'description', 'instructions']));
});

test('a skill mounted by a later render is narrated to the model with a resources signal', async () => {
  const { usePersistentState, useTool } = await import('@flue/runtime');
  function Unlocking() {
    useModel('anthropic/claude-haiku-4-5');
    const [unlocked, setUnlocked] = usePersistentState('unlocked', false);
    useTool({
      name: 'unlock',
      description: 'Unlock the release skill.',
      run: () => {
        setUnlocked(true);
        return 'unlocked';
      },
    });
    if (unlocked) useSkill(release);
    return 'Write things.';
  }
  await ctx.start([Unlocking]);
  ctx.server.script({ toolCalls: [{ name: 'unlock', arguments: {} }] }, { text: 'ok' });
  const handle = init(Unlocking, { id: 'sk-2' });
  await handle.read(await handle.dispatch('unlock it'));
  const signals = ctx.server.requests[1]!.messages.map((m) => m.content).filter((c) => c.includes('type="resources"'));
  const skill = signals.find((c) => c.includes('resource="skill"'))!;
  expect(skill).toContain('New skill available:');
  expect(skill).toContain('- **release-notes** — Write release notes from a changelog.');
  expect(skill).toContain('All available skills: release-notes');
  // The skill tools appeared too, narrated as tools.
  expect(signals.find((c) => c.includes('resource="tool"'))).toContain('activate_skill');
});
