/**
 * Skills and subagents on the Cloudflare host, end to end (issue 6, "Tests on both hosts"; the
 * Node side is test/skills.test.ts, test/subagents.test.ts, test/sandbox.test.ts): a real agent in
 * a Durable Object, a scripted model, and assertions on what the model received.
 *
 * - a skill listed in the catalog, activated (`activate_skill`) and its resource read
 *   (`read_skill_resource`) by the path the activation listed;
 * - the delegation depth cap: delegates run at depths 1 to 4, and the fifth nested task gets the
 *   `delegation_depth_exceeded` message as the task tool's error result;
 * - `GeneralSubagent` (`flue-general`): a blank delegate with the shared sandbox and the parent's model;
 * - the seed's `review_contract` harness tool (harness.sandbox + harness.prompt), verbatim.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { AgentRunError, DelegationDepthExceededError, GeneralSubagent, init } from '@flue/runtime';
import { type RecordedMessage, type RecordedRequest, childConversations } from '@flue/runtime/testing';
import { labNotes } from './sandbox-agents.ts';
import { GENERAL_INSTRUCTIONS, STUDIO_LANE, Studio } from './skills-subagents-agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

const LANE = STUDIO_LANE;

beforeEach(async () => resetLane(LANE));
afterEach(async () => resetLane(LANE));

const toolResults = (request: RecordedRequest): RecordedMessage[] => request.messages.filter((m) => m.role === 'tool');
const resultOf = (request: RecordedRequest, toolCallId: string) =>
  request.messages.find((m) => m.role === 'tool' && m.toolCallId === toolCallId);
const sorted = (request: RecordedRequest) => request.tools.map((t) => t.name).sort();

const NO_AGENTS_SECTION = '## Available Agents\nNo subagents are declared for this agent. Do not call the `task` tool.';

test('a skill is listed in the catalog, activated with activate_skill, and its resource read by the listed path', async () => {
  const handle = init(Studio, { id: 'skills-1' });
  // Turn one: activate both skills (an inline defineSkill and a packaged SKILL.md) and a missing one.
  await scriptLane(
    LANE,
    {
      toolCalls: [
        { id: 'call_act_release', name: 'activate_skill', arguments: { name: 'release-notes' } },
        { id: 'call_act_lab', name: 'activate_skill', arguments: { name: 'lab-notes' } },
        { id: 'call_act_missing', name: 'activate_skill', arguments: { name: 'tax-forms' } },
      ],
    },
    { text: 'Skills loaded.' },
  );
  expect((await handle.read(await handle.dispatch('Get ready to write release notes.'))).text).toBe('Skills loaded.');
  const [first, activated] = await laneRequests(LANE);
  expect(first!.system).toContain('## Available Skills');
  expect(first!.system).toContain('call the `activate_skill` tool');
  expect(first!.system).toContain('- **release-notes** — Write release notes from a changelog.');
  expect(first!.system).toContain('- **lab-notes** — Keep lab notes in the house format.');
  expect(sorted(first!)).toEqual(['activate_skill', 'read_skill_resource', 'task']);

  const release = resultOf(activated!, 'call_act_release')!;
  expect(release.isError).toBe(false);
  expect(release.content).toMatch(
    /^Run the skill named "release-notes"\.\n\n<skill_instructions>\nGroup changes by type\. Keep each line short\.\n<\/skill_instructions>\n\n.*read_skill_resource.*\n<skill_resources>\n- templates\/notes\.md → read_skill_resource \/\.flue\/packaged-skills\/skill%3Arelease-notes%3A[0-9a-f]{16}\/templates\/notes\.md\n<\/skill_resources>$/,
  );
  const labRoot = `/.flue/packaged-skills/${encodeURIComponent(labNotes.id)}`;
  const lab = resultOf(activated!, 'call_act_lab')!;
  expect(lab.isError).toBe(false);
  expect(lab.content).toContain('<skill_instructions>\n# Lab notes\n\nFollow ref/guide.md when writing notes.\n</skill_instructions>');
  expect(lab.content).toContain(
    `- logo.png → read_skill_resource ${labRoot}/logo.png\n- ref/guide.md → read_skill_resource ${labRoot}/ref/guide.md`,
  );
  // An unknown name is a factual miss, not an error.
  expect(resultOf(activated!, 'call_act_missing')).toMatchObject({
    isError: false,
    content: 'Skill "tax-forms" is not available. Available skills: release-notes, lab-notes.',
  });

  // Turn two: the model reads the resources by the paths the activation listed.
  const templatePath = / → read_skill_resource (\S+)$/m.exec(release.content)![1]!;
  await scriptLane(
    LANE,
    {
      toolCalls: [
        { id: 'call_read_template', name: 'read_skill_resource', arguments: { path: templatePath } },
        { id: 'call_read_guide', name: 'read_skill_resource', arguments: { path: `${labRoot}/ref/guide.md`, offset: 3, limit: 1 } },
        { id: 'call_read_missing', name: 'read_skill_resource', arguments: { path: templatePath.replace('notes.md', 'nope.md') } },
      ],
    },
    { text: 'Notes written.' },
  );
  expect((await handle.read(await handle.dispatch('Now write them.'))).text).toBe('Notes written.');
  const read = (await laneRequests(LANE))[3]!;
  expect(resultOf(read, 'call_read_template')).toMatchObject({ isError: false, content: '# Release {{version}}\n\n## Fixes' });
  expect(resultOf(read, 'call_read_guide')).toMatchObject({
    isError: false,
    content: '1. Date every entry.\n\n[Showing lines 3-3 of 4. Use offset=4 to continue.]',
  });
  expect(resultOf(read, 'call_read_missing')).toMatchObject({
    isError: true,
    content: `[flue] Packaged skill file not found: ${templatePath.replace('notes.md', 'nope.md')}`,
  });
  // Activation never changes the catalog.
  expect(read.system).toBe(first!.system);
});

test('delegation deeper than the cap is refused: the depth-4 delegate task call gets delegation_depth_exceeded as its error result', async () => {
  const call = (id: string) => ({ toolCalls: [{ id, name: 'task', arguments: { agent: 'deeper', prompt: `go deeper (${id})` } }] });
  await scriptLane(
    LANE,
    call('call_d1'), // depth 0 (main) delegates
    call('call_d2'), // depth 1 delegates
    call('call_d3'), // depth 2 delegates
    call('call_d4'), // depth 3 delegates
    call('call_d5'), // depth 4 delegates: refused, delegates run at most 4 levels below the main conversation
    { text: 'depth 4 done' },
    { text: 'd3' },
    { text: 'd2' },
    { text: 'd1' },
    { text: 'top done' },
  );
  const handle = init(Studio, { id: 'depth-1' });
  expect((await handle.read(await handle.dispatch('Go as deep as you can.'))).text).toBe('top done');

  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(10);
  expect(requests[0]!.system).toContain('Start the chain.');
  for (const level of [1, 2, 3, 4]) {
    expect(requests[level]!.system).toBe(
      'Delegate deeper.\n\n## Available Agents\nDelegate focused work with the `task` tool, naming one of these agents:\n- **deeper** — Delegates again.',
    );
    expect(requests[level]!.messages.map((m) => m.content)).toEqual([`go deeper (call_d${level})`]);
  }
  // The depth-4 delegate's task call never ran: its error result is the cap's message.
  const refused = resultOf(requests[5]!, 'call_d5')!;
  const expected = new DelegationDepthExceededError(4);
  expect(expected.type).toBe('delegation_depth_exceeded');
  expect(refused).toMatchObject({ isError: true, content: expected.message });
  expect(refused.content).toBe('Maximum delegation depth (4) exceeded.');
  // Each level got its delegate's final text back, as a normal result.
  expect(resultOf(requests[6]!, 'call_d4')).toMatchObject({ isError: false, content: 'depth 4 done' });
  expect(resultOf(requests[7]!, 'call_d3')).toMatchObject({ isError: false, content: 'd3' });
  expect(resultOf(requests[8]!, 'call_d2')).toMatchObject({ isError: false, content: 'd2' });
  expect(resultOf(requests[9]!, 'call_d1')).toMatchObject({ isError: false, content: 'd1' });
  expect(toolResults(requests[9]!)).toHaveLength(1);

  // Four nested child conversations, each retained on the one that delegated to it; no fifth.
  const children = await childConversations(Studio, 'depth-1');
  expect(children.map((c) => [c.agent, c.toolCallId])).toEqual([
    ['deeper', 'call_d1'],
    ['deeper', 'call_d2'],
    ['deeper', 'call_d3'],
    ['deeper', 'call_d4'],
  ]);
  expect(children[1]!.parentConversationId).toBe(children[0]!.conversationId);
  expect(children[2]!.parentConversationId).toBe(children[1]!.conversationId);
  expect(children[3]!.parentConversationId).toBe(children[2]!.conversationId);
  const deepest = children[3]!.snapshot.messages.at(-1)!.parts;
  expect(deepest.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'task', toolCallId: 'call_d5', state: 'output-error' });
  expect(deepest.at(-1)).toMatchObject({ type: 'text', text: 'depth 4 done' });
});

test('GeneralSubagent (flue-general) is a blank delegate: shared sandbox, the parent model, none of the parent instructions or tools', async () => {
  await scriptLane(
    LANE,
    {
      toolCalls: [
        { id: 'call_general', name: 'task', arguments: { agent: 'flue-general', prompt: 'Summarize brief.txt into summary.txt.' } },
      ],
    },
    // The delegate's own conversation.
    {
      toolCalls: [
        { id: 'call_g_read', name: 'read', arguments: { path: 'brief.txt' } },
        { id: 'call_g_write', name: 'write', arguments: { path: 'summary.txt', content: 'Importer due Friday.' } },
      ],
    },
    { text: 'Wrote summary.txt: importer due Friday.' },
    // Back in the parent: the file the delegate wrote is in the shared sandbox.
    { toolCalls: [{ id: 'call_cat', name: 'bash', arguments: { command: 'cat summary.txt' } }] },
    { text: 'The helper says the importer is due Friday.' },
  );
  const handle = init(Studio, { id: 'general-1' });
  expect((await handle.read(await handle.dispatch('What does the brief say?'))).text).toBe('The helper says the importer is due Friday.');

  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(5);
  const [parent, child, childAfter, parentAfter] = requests;
  expect(parent!.system).toBe(
    `${GENERAL_INSTRUCTIONS}\n\n## Available Agents\nDelegate focused work with the \`task\` tool, naming one of these agents:\n- **flue-general** — ${GeneralSubagent.description}`,
  );
  expect(sorted(parent!)).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'stamp', 'task', 'write']);
  // The delegate: no parent instructions, no parent tool, no parent history; the parent's model.
  expect(child!.system).toBe(NO_AGENTS_SECTION);
  expect(sorted(child!)).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'task', 'write']);
  expect(child!.messages).toEqual([{ role: 'user', content: 'Summarize brief.txt into summary.txt.' }]);
  expect(child!.body.model).toBe(parent!.body.model);
  expect(resultOf(childAfter!, 'call_g_read')).toMatchObject({ isError: false, content: 'Ship the importer by Friday.' });
  expect(resultOf(childAfter!, 'call_g_write')).toMatchObject({ isError: false, content: 'Successfully wrote 20 bytes to summary.txt' });
  // Only the delegate's final text comes back.
  expect(toolResults(parentAfter!)).toEqual([
    { role: 'tool', toolCallId: 'call_general', isError: false, content: 'Wrote summary.txt: importer due Friday.' },
  ]);
  expect(resultOf(requests[4]!, 'call_cat')).toMatchObject({ isError: false, content: 'Importer due Friday.' });

  const children = await childConversations(Studio, 'general-1');
  expect(children).toHaveLength(1);
  expect(children[0]).toMatchObject({ agent: 'flue-general', toolCallId: 'call_general', via: 'conversation' });
});

test("the seed's review_contract runs as written: it stages the contract through harness.sandbox and returns the validated report", async () => {
  await scriptLane(
    LANE,
    { toolCalls: [{ id: 'call_review', name: 'review_contract', arguments: { contract: 'Clause 9: unlimited liability.' } }] },
    // The harness's scratch conversation reads the staged file and finishes with a report.
    { toolCalls: [{ id: 'call_s_read', name: 'read', arguments: { path: 'contract.md' } }] },
    { toolCalls: [{ name: 'finish', arguments: { riskLevel: 'high', summary: 'Unlimited liability.' } }] },
    // Back in the main conversation: the staged file stays in the agent's durable sandbox.
    { toolCalls: [{ id: 'call_cat', name: 'bash', arguments: { command: 'cat contract.md' } }] },
    { text: 'High risk: unlimited liability.' },
  );
  const handle = init(Studio, { id: 'review-1' });
  expect((await handle.read(await handle.dispatch('Review this contract.'))).text).toBe('High risk: unlimited liability.');

  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(5);
  const [main, scratch, scratchAfter, mainAfter, last] = requests;
  expect(sorted(main!)).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'review_contract', 'task', 'write']);
  expect(main!.tools.find((t) => t.name === 'review_contract')!.description).toBe('审查提供的合同并返回结构化风险报告。');
  // The scratch conversation: the seed's prompt with the finish instruction, finish/give_up offered.
  expect(scratch!.messages).toHaveLength(1);
  expect(scratch!.messages[0]!.content).toContain('审查 contract.md 的非标准条款并评估风险。');
  expect(scratch!.messages[0]!.content).toContain('call the `finish` tool');
  expect(sorted(scratch!)).toEqual(['bash', 'edit', 'finish', 'give_up', 'glob', 'grep', 'read', 'review_contract', 'task', 'write']);
  expect(resultOf(scratchAfter!, 'call_s_read')).toMatchObject({ isError: false, content: 'Clause 9: unlimited liability.' });
  // The main conversation gets the validated report, and none of the scratch conversation.
  const review = resultOf(mainAfter!, 'call_review')!;
  expect(review.isError).toBe(false);
  expect(JSON.parse(review.content)).toEqual({ riskLevel: 'high', summary: 'Unlimited liability.' });
  expect(mainAfter!.messages.map((m) => m.content).join('\n')).not.toContain('审查 contract.md');
  expect(resultOf(last!, 'call_cat')).toMatchObject({ isError: false, content: 'Clause 9: unlimited liability.' });
});

test('workspace context on workerd: AGENTS.md and .agents/skills from the sandbox cwd, and from a task cwd for the delegate', async () => {
  await scriptLane(
    LANE,
    { toolCalls: [{ id: 'call_ws_act', name: 'activate_skill', arguments: { name: 'changelog' } }] },
    {
      toolCalls: [
        { id: 'call_ws_task', name: 'task', arguments: { agent: 'flue-general', prompt: 'Check the vendored package.', cwd: 'pkg' } },
      ],
    },
    { toolCalls: [{ id: 'call_ws_vendor', name: 'activate_skill', arguments: { name: 'vendor-check' } }] }, // the delegate
    { text: 'Matches upstream.' },
    { text: 'Changelog updated; vendored package checked.' },
  );
  const handle = init(Studio, { id: 'workspace-1' });
  expect((await handle.read(await handle.dispatch('Update the changelog and check pkg.'))).text).toBe(
    'Changelog updated; vendored package checked.',
  );

  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(5);
  const [main, mainAfter, delegate, delegateAfter] = requests;
  expect(main!.system).toContain('Maintain the repository.\n\n## Workspace Instructions\n\n');
  expect(main!.system).toContain('Instructions from /repo/AGENTS.md:\n\nRun the linter before you finish.');
  expect(main!.system).toContain('- **changelog** — Update the changelog.');
  expect(main!.system).not.toContain('vendor-check');
  expect(resultOf(mainAfter!, 'call_ws_act')!.content).toContain('<skill_instructions>\nAdd one line per change.');

  expect(delegate!.system).toContain('Instructions from /repo/pkg/AGENTS.md:\n\nThis package is vendored: read only.');
  expect(delegate!.system).not.toContain('Run the linter');
  expect(delegate!.system).toContain('- **vendor-check** — Check the vendored package.');
  expect(delegate!.system).not.toContain('**changelog**');
  expect(resultOf(delegateAfter!, 'call_ws_vendor')).toMatchObject({ isError: false });
  expect(resultOf(delegateAfter!, 'call_ws_vendor')!.content).toContain('<skill_instructions>\nCompare against upstream.');
});

test('reserved names on workerd: "flue-general" is GeneralSubagent only; finish and give_up are ordinary tool names outside harness prompts', async () => {
  expect(GeneralSubagent.name).toBe('flue-general');
  const impostor = init(Studio, { id: 'impostor-1' });
  const failed = await impostor.read(await impostor.dispatch('Delegate.')).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(AgentRunError);
  expect((failed as Error).message).toContain('useSubagent(): the name "flue-general" is reserved for GeneralSubagent');
  expect(await laneRequests(LANE)).toHaveLength(0);

  await scriptLane(LANE, { toolCalls: [{ id: 'call_fin', name: 'finish', arguments: {} }] }, { text: 'Closed.' });
  const finisher = init(Studio, { id: 'finisher-1' });
  expect((await finisher.read(await finisher.dispatch('Close it.'))).text).toBe('Closed.');
  const requests = await laneRequests(LANE);
  expect(requests[0]!.tools.map((t) => t.name)).toEqual(['task', 'finish', 'give_up']);
  expect(resultOf(requests[1]!, 'call_fin')).toMatchObject({ isError: false, content: JSON.stringify('ticket finished') });
});
