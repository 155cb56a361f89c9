/**
 * Dynamic resources (skills-subagents-mcp.md §4), asserted on what the scripted model server
 * received: the frozen baseline catalogs in the system prompt, live resolution of
 * `activate_skill`/`task`, the `instructions` and `environment` signals, and the compaction
 * rebaseline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import {
  type DeliveredMessage,
  defineSkill,
  defineSubagent,
  init,
  useDelivery,
  useModel,
  usePersistentState,
  useSandbox,
  useSkill,
  useSubagent,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import type { RecordedRequest } from '@flue/runtime/testing';
import { useScriptedRuntime } from './support/scripted-runtime.ts';

const ctx = useScriptedRuntime();
const dir = mkdtempSync(path.join(tmpdir(), 'flue-dynamic-resources-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const notes = defineSkill({ name: 'release-notes', description: 'Write release notes.', instructions: 'NOTES BODY' });
const triage = defineSkill({ name: 'triage', description: 'Triage issues.', instructions: 'TRIAGE BODY' });

/** The model context of a request as one text (signals are user-role messages). */
const contextText = (request: RecordedRequest) => request.messages.map((m) => m.content).join('\n');
const count = (text: string, part: string) => text.split(part).length - 1;
const lastToolResult = (request: RecordedRequest) => request.messages.filter((m) => m.role === 'tool').at(-1)!;

function Shifting() {
  useModel('anthropic/claude-haiku-4-5');
  const [phase, setPhase] = usePersistentState('phase', 0);
  useTool({ name: 'advance', description: 'Advance to the next phase.', run: () => (setPhase((p) => p + 1), 'advanced') });
  if (phase === 0) useSkill(notes);
  if (phase >= 1) useSkill(triage);
  return 'Work through the phases.';
}

test('the skill catalog stays on the baseline while activate_skill resolves against the live set', async () => {
  const db = path.join(dir, 'skills.db');
  await ctx.start([Shifting], { db: sqlite(db) });
  ctx.server.script(
    { toolCalls: [{ name: 'advance', arguments: {} }] },
    { toolCalls: [{ name: 'activate_skill', arguments: { name: 'triage' } }] },
    { toolCalls: [{ name: 'activate_skill', arguments: { name: 'release-notes' } }] },
    { text: 'done' },
  );
  const handle = init(Shifting, { id: 'dr-skills' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('done');
  const [first, second, third, fourth] = ctx.server.requests;
  expect(first!.system).toContain('## Available Skills');
  expect(first!.system).toContain('- **release-notes** — Write release notes.');
  expect(first!.system).not.toContain('triage');
  // The set changed, the prompt did not: the change is narrated instead.
  expect(second!.system).toBe(first!.system);
  expect(fourth!.system).toBe(first!.system);
  const narrated = contextText(second!);
  expect(narrated).toContain('New skill available:\n- **triage** — Triage issues.');
  expect(narrated).toContain('The skill "release-notes" is no longer available.');
  expect(narrated).toContain('All available skills: triage');
  // Activation resolves against the live set, not the catalog.
  expect(lastToolResult(third!).content).toContain('TRIAGE BODY');
  expect(lastToolResult(fourth!)).toMatchObject({
    isError: false,
    content: 'Skill "release-notes" is not available. Available skills: triage.',
  });

  // The baseline is durable: a later response, and a restarted runtime, still render it.
  ctx.server.script({ text: 'again' });
  await handle.read(await handle.dispatch('again'));
  expect(ctx.server.requests[4]!.system).toBe(first!.system);
  await ctx.flue!.stop();
  ctx.server.reset();
  await ctx.start([Shifting], { db: sqlite(db) });
  ctx.server.script({ text: 'after restart' });
  const restarted = init(Shifting, { id: 'dr-skills' });
  expect((await restarted.read(await restarted.dispatch('and now?'))).text).toBe('after restart');
  expect(ctx.server.requests[0]!.system).toBe(first!.system);
  expect(count(contextText(ctx.server.requests[0]!), 'type="resources"')).toBe(count(contextText(fourth!), 'type="resources"'));
});

const helper = defineSubagent({ name: 'helper', description: 'Helps with anything.', agent: () => 'You help.' });

function Hiring() {
  useModel('anthropic/claude-haiku-4-5');
  const [hired, setHired] = usePersistentState('hired', false);
  useTool({ name: 'hire', description: 'Hire the helper.', run: () => (setHired(true), 'hired') });
  if (hired) useSubagent(helper);
  return 'Lead the work.';
}

test('the agent roster stays on the baseline while task resolves against the live roster', async () => {
  await ctx.start([Hiring]);
  ctx.server.script(
    { toolCalls: [{ name: 'hire', arguments: {} }] },
    { toolCalls: [{ name: 'task', arguments: { agent: 'helper', prompt: 'Do the thing.' } }] },
    { text: 'helped' },
    { text: 'done' },
  );
  const handle = init(Hiring, { id: 'dr-agents' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('done');
  const [first, second, child, last] = ctx.server.requests;
  expect(first!.system).not.toContain('**helper**');
  expect(second!.system).toBe(first!.system);
  expect(contextText(second!)).toContain('New agent available:\n- **helper** — Helps with anything.\nAll available agents: helper');
  expect(child!.system!.startsWith('You help.')).toBe(true);
  expect(lastToolResult(last!)).toMatchObject({ isError: false, content: 'helped' });
});

let deployed = 'Version one.';
const deliveries: (DeliveredMessage | undefined)[] = [];

function Evolving() {
  useModel('anthropic/claude-haiku-4-5');
  deliveries.push(useDelivery());
  const [mode, setMode] = usePersistentState('mode', 'calm');
  useTool({ name: 'excite', description: 'Get excited.', run: () => (setMode('excited'), 'excited') });
  return `${deployed} Mode: ${mode}.`;
}

const INSTRUCTIONS_SIGNAL = '<signal type="instructions">\nSystem instructions updated.\n</signal>';

test('an instruction change is marked with an instructions signal, within and between responses', async () => {
  await ctx.start([Evolving]);
  ctx.server.script({ toolCalls: [{ name: 'excite', arguments: {} }] }, { text: 'one' });
  const handle = init(Evolving, { id: 'dr-instructions' });
  deliveries.length = 0;
  await handle.read(await handle.dispatch('first'));
  const [first, second] = ctx.server.requests;
  expect(count(contextText(first!), 'type="instructions"')).toBe(0);
  expect(second!.system!.startsWith('Version one. Mode: excited.\n')).toBe(true);
  expect(count(contextText(second!), INSTRUCTIONS_SIGNAL)).toBe(1);
  // The framework signal did not move the useDelivery() cursor.
  expect(deliveries.length).toBeGreaterThan(2);
  expect(deliveries.every((delivery) => delivery?.kind === 'user' && delivery.body === 'first')).toBe(true);

  // A change between responses (a redeploy) is announced before the next response's first turn.
  deployed = 'Version two.';
  ctx.server.script({ text: 'two' }, { text: 'three' });
  await handle.read(await handle.dispatch('second'));
  const third = ctx.server.requests[2]!;
  expect(third.system!.startsWith('Version two. Mode: excited.\n')).toBe(true);
  expect(count(contextText(third), INSTRUCTIONS_SIGNAL)).toBe(2);
  expect(contextText(third).endsWith(INSTRUCTIONS_SIGNAL)).toBe(true);
  // Nothing changed since: no further marker.
  await handle.read(await handle.dispatch('third'));
  expect(count(contextText(ctx.server.requests[3]!), INSTRUCTIONS_SIGNAL)).toBe(2);
  deployed = 'Version one.';
});

function Roaming() {
  useModel('anthropic/claude-haiku-4-5');
  const [attached, setAttached] = usePersistentState('attached', false);
  useTool({ name: 'toggle', description: 'Attach or detach the sandbox.', run: () => (setAttached((a) => !a), 'toggled') });
  if (attached) {
    useSandbox(virtualSandbox({ files: { '/srv/app/a.txt': 'A' } }), { cwd: '/srv/app' });
    useSkill(triage);
  }
  return 'Roam.';
}

test('a sandbox presence flip is one environment signal that supersedes the resources deltas', async () => {
  await ctx.start([Roaming]);
  ctx.server.script(
    { toolCalls: [{ name: 'toggle', arguments: {} }] },
    { toolCalls: [{ name: 'toggle', arguments: {} }] },
    { text: 'done' },
  );
  const handle = init(Roaming, { id: 'dr-environment' });
  expect((await handle.read(await handle.dispatch('go'))).text).toBe('done');
  const [first, attached, detached] = ctx.server.requests;
  expect(first!.tools.map((t) => t.name)).not.toContain('bash');
  expect(attached!.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read', 'bash', 'toggle', 'activate_skill']));

  const onAttach = attached!.messages.filter((m) => m.content.includes('type="environment"'));
  expect(onAttach).toHaveLength(1);
  const body = onAttach[0]!.content;
  expect(body).toContain('working directory is now `/srv/app`');
  expect(body).toContain('may be gone');
  const toolsLine = body.split('\n').find((line) => line.startsWith('All available tools: '))!;
  expect(toolsLine.slice('All available tools: '.length).split(', ')).toEqual(attached!.tools.map((t) => t.name));
  expect(body).toContain('All available skills:\n- **triage** — Triage issues.');
  expect(body).toContain('All available agents: (none)');
  expect(contextText(attached!)).not.toContain('type="resources"');

  const onDetach = detached!.messages.filter((m) => m.content.includes('type="environment"'));
  expect(onDetach).toHaveLength(2);
  expect(onDetach[1]!.content).toContain('no sandbox anymore');
  expect(onDetach[1]!.content).toContain('All available skills: (none)');
  expect(contextText(detached!)).not.toContain('type="resources"');
  expect(contextText(detached!)).not.toContain('type="instructions"');
});

const long = 'word '.repeat(120);

function Growing() {
  useModel('anthropic/claude-haiku-4-5', { compaction: { keepRecentTokens: 20 } });
  const [grown, setGrown] = usePersistentState('grown', false);
  useTool({ name: 'grow', description: 'Grow a skill.', run: () => (setGrown(true), 'grown') });
  if (grown) useSkill(triage);
  return 'Grow.';
}

test('compaction rebaselines the prompt catalogs and the narration snapshot', async () => {
  await ctx.start([Growing], { contextWindow: 2000 });
  ctx.server.script(
    { toolCalls: [{ name: 'grow', arguments: {} }] },
    { text: long, usage: { input: 1500, output: 100 } },
    // The cut splits the tool turn: the history and the turn prefix are summarized separately.
    { text: 'SUMMARY' },
    { text: 'PREFIX' },
    { text: 'after compaction' },
  );
  const handle = init(Growing, { id: 'dr-compaction' });
  await handle.read(await handle.dispatch('grow please'));
  const [first, second] = ctx.server.requests;
  expect(first!.system).not.toContain('## Available Skills');
  expect(second!.system).toBe(first!.system);
  expect(contextText(second!)).toContain('New skill available:\n- **triage** — Triage issues.');

  expect((await handle.read(await handle.dispatch('and then?'))).text).toBe('after compaction');
  const after = ctx.server.requests.at(-1)!;
  expect(after.messages[0]!.content).toContain('<compaction type="context_summary">');
  expect(after.system).toContain('## Available Skills');
  expect(after.system).toContain('- **triage** — Triage issues.');
  // Nothing is re-narrated after the rebaseline: the new input is the last thing in the context.
  expect(after.messages.at(-1)!.content).toBe('and then?');
});
