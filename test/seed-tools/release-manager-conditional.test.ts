/**
 * Tools seed, "条件工具": ReleaseManager unlocks publish_release through persistent state set by
 * record_approval. Runs the seed's agent file unmodified on start().
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqlite } from '@flue/runtime/node';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { ReleaseManager } from './conditional/src/agents/release-manager.ts';
import { approvals } from './conditional/src/shared/approvals.ts';
import { releases } from './conditional/src/shared/releases.ts';
import { dispatchAndRead, signals, toolNames, toolResult } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

afterEach(() => {
  approvals.reset();
  releases.reset();
});

const VALID = 'OP-7781';

describe('ReleaseManager with a conditional tool (seed 000)', () => {
  it('publish_release is absent until a valid approval; the next request mounts it and a resources signal announces it', async () => {
    approvals.allow(VALID);
    await ctx.start([ReleaseManager]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_rec', name: 'record_approval', arguments: { code: VALID } }] },
      { toolCalls: [{ id: 'toolu_pub', name: 'publish_release', arguments: { pkg: 'flue', version: '2.0.0' } }] },
      { text: '已发布 flue@2.0.0。' },
    );
    const { reply } = await dispatchAndRead(ReleaseManager, 'rm-1', `批准代码 ${VALID},请发布 flue@2.0.0`);

    const [first, second, third] = ctx.server.requests;
    expect(first!.system).toBe(promptOf('准备发布。发布在操作员批准后解锁。'));
    expect(toolNames(first!)).toContain('record_approval');
    expect(toolNames(first!)).not.toContain('publish_release');
    expect(signals(first!, 'resources')).toEqual([]);
    expect(first!.tools.find((t) => t.name === 'record_approval')).toMatchObject({
      description: '记录此版本的操作员批准代码。',
      parameters: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
    });

    expect(approvals.calls).toEqual([VALID]);
    // A bare string return reaches the model JSON-quoted (tools.md §3).
    expect(toolResult(second!, 'toolu_rec').content).toBe(JSON.stringify('批准已记录。发布工具现在可用。'));
    expect(toolNames(second!)).toEqual(expect.arrayContaining(['record_approval', 'publish_release']));
    expect(second!.tools.find((t) => t.name === 'publish_release')?.parameters).toMatchObject({
      properties: { pkg: { type: 'string' }, version: { type: 'string' } },
    });
    const announced = signals(second!, 'resources');
    expect(announced).toHaveLength(1);
    expect(announced[0]).toMatch(/^<signal type="resources" resource="tool"/);
    expect(announced[0]).toContain('publish_release');
    // Only the delta is announced as new (the roster line, if any, lists everything).
    const body = announced[0]!.split('\n').slice(1, -1);
    const added = body.filter((line) => !line.startsWith('All available')).join('\n');
    expect(added).toContain('publish_release');
    expect(added).not.toContain('record_approval');
    // The announcement comes after the tool result that caused it (at the next turn boundary).
    const order = second!.messages.map((m) =>
      m.role === 'tool' ? `tool:${m.toolCallId}` : m.content.includes('type="resources"') ? 'resources' : m.role,
    );
    expect(order.indexOf('resources')).toBeGreaterThan(order.indexOf('tool:toolu_rec'));

    expect(releases.calls).toEqual([{ pkg: 'flue', version: '2.0.0', idempotencyKey: 'toolu_pub' }]);
    expect(toolResult(third!, 'toolu_pub').content).toBe(
      JSON.stringify({ published: 'flue@2.0.0', url: 'https://www.npmjs.com/package/flue/v/2.0.0' }),
    );
    // Unchanged tool set: no second announcement.
    expect(signals(third!, 'resources')).toHaveLength(1);
    expect(reply.text).toBe('已发布 flue@2.0.0。');
  });

  it('an invalid code keeps publish_release unmounted; a call to it anyway is refused without running', async () => {
    approvals.allow(VALID);
    await ctx.start([ReleaseManager]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_rec_bad', name: 'record_approval', arguments: { code: 'WRONG' } }] },
      { toolCalls: [{ id: 'toolu_sneak', name: 'publish_release', arguments: { pkg: 'flue', version: '2.0.0' } }] },
      { text: '批准代码无效,无法发布。' },
    );
    const { reply } = await dispatchAndRead(ReleaseManager, 'rm-bad', '代码 WRONG,发布吧');

    const [, second, third] = ctx.server.requests;
    expect(approvals.calls).toEqual(['WRONG']);
    expect(toolResult(second!, 'toolu_rec_bad').content).toBe(JSON.stringify('无效的批准代码。'));
    expect(toolNames(second!)).not.toContain('publish_release');
    expect(signals(second!, 'resources')).toEqual([]);
    const sneak = toolResult(third!, 'toolu_sneak');
    expect(sneak.isError).toBe(true);
    expect(sneak.content).toContain('publish_release');
    expect(toolNames(third!)).not.toContain('publish_release');
    expect(releases.calls).toEqual([]);
    expect(reply.text).toBe('批准代码无效,无法发布。');
  });

  it('the approval persists across dispatches on the same instance id, and only there', async () => {
    approvals.allow(VALID);
    await ctx.start([ReleaseManager]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_rec2', name: 'record_approval', arguments: { code: VALID } }] }, { text: '批准已记录。' });
    await dispatchAndRead(ReleaseManager, 'rm-persist', `批准代码 ${VALID}`);
    expect(toolNames(ctx.server.requests[1]!)).toContain('publish_release');

    ctx.server.script({ text: '可以发布了。' });
    const { reply } = await dispatchAndRead(ReleaseManager, 'rm-persist', '现在能发布吗?');
    const later = ctx.server.requests[2]!;
    expect(toolNames(later)).toContain('publish_release');
    expect(signals(later, 'resources')).toHaveLength(1); // announced once, when it changed
    expect(reply.text).toBe('可以发布了。');

    ctx.server.script({ text: '需要批准。' });
    await dispatchAndRead(ReleaseManager, 'rm-other', '能发布吗?');
    const other = ctx.server.requests[3]!;
    expect(toolNames(other)).toContain('record_approval');
    expect(toolNames(other)).not.toContain('publish_release');
    expect(approvals.calls).toEqual([VALID]);
  });

  it('the approval survives a runtime restart on the same database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flue-seed-tools-'));
    const path = join(dir, 'flue.sqlite');
    try {
      approvals.allow(VALID);
      await ctx.start([ReleaseManager], { db: sqlite(path) });
      ctx.server.script(
        { toolCalls: [{ id: 'toolu_rec3', name: 'record_approval', arguments: { code: VALID } }] },
        { text: '批准已记录。' },
      );
      await dispatchAndRead(ReleaseManager, 'rm-restart', `批准代码 ${VALID}`);
      await ctx.flue!.stop();

      await ctx.start([ReleaseManager], { db: sqlite(path) });
      ctx.server.script({ text: '仍然已批准。' });
      await dispatchAndRead(ReleaseManager, 'rm-restart', '还能发布吗?');
      expect(toolNames(ctx.server.requests[2]!)).toContain('publish_release');
      expect(approvals.calls).toEqual([VALID]);
    } finally {
      await ctx.flue?.stop();
      ctx.flue = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // skills-subagents-mcp.md §4 fixes the narration format of a tool-set change.
  it('the resources signal uses the spec narration format (skills-subagents-mcp.md §4)', async () => {
    approvals.allow(VALID);
    await ctx.start([ReleaseManager]);
    ctx.server.script({ toolCalls: [{ id: 'toolu_rec4', name: 'record_approval', arguments: { code: VALID } }] }, { text: 'ok' });
    await dispatchAndRead(ReleaseManager, 'rm-format', `批准代码 ${VALID}`);
    const [announced] = signals(ctx.server.requests[1]!, 'resources');
    expect(announced).toBeDefined();
    const lines = announced!.split('\n');
    expect(lines[0]).toBe('<signal type="resources" resource="tool">');
    expect(lines[1]).toBe('New tool available:');
    expect(lines[2]).toBe('- **publish_release** — 将已批准的版本发布到 npm。');
    expect(lines.at(-2)).toMatch(/^All available tools: /);
    expect(lines.at(-2)!.replace('All available tools: ', '').split(', ').sort()).toEqual(['publish_release', 'record_approval', 'task']);
    expect(lines.at(-1)).toBe('</signal>');
  });
});
