/**
 * Tools seed, "持久化工具": provision_workspace (durable: true, step.do) on start(). Crash
 * recovery is covered elsewhere; here each step runs once per call, the output is right, step
 * progress is reported as log events (never to the model), and a new call runs its steps fresh.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { observe, type FlueEvent } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { Onboarding } from './provision-workspace/src/agents/onboarding.ts';
import { DEFAULT_PROJECTS, billing, projects, resetProvisioning } from './provision-workspace/src/shared/provisioning.ts';
import { provisionWorkspace } from './provision-workspace/src/tools/provision-workspace.ts';
import { dispatchAndRead, toolResult } from './helpers.ts';

const ctx = useScriptedRuntime();

afterEach(() => resetProvisioning());

describe('provision_workspace (seed 000, durable tool)', () => {
  it('is a durable tool definition', () => {
    expect(provisionWorkspace.durable).toBe(true);
  });

  it('runs every step exactly once and returns { tenantId, projects }', async () => {
    const logs: FlueEvent[] = [];
    const unsubscribe = observe((event) => {
      if (event.type === 'log') logs.push(event);
    });
    try {
      await ctx.start([Onboarding]);
      ctx.server.script(
        { toolCalls: [{ id: 'toolu_prov1', name: 'provision_workspace', arguments: { customerId: 'cus_42' } }] },
        { text: '工作空间已就绪。' },
      );
      const { reply } = await dispatchAndRead(Onboarding, 'onb-1', '为 cus_42 配置工作空间');

      expect(billing.calls).toEqual(['cus_42']);
      expect(projects.calls).toEqual(DEFAULT_PROJECTS.map((p) => ({ tenantId: 'tenant_1', project: p.name })));
      const result = toolResult(ctx.server.requests[1]!, 'toolu_prov1');
      expect(result.isError).not.toBe(true);
      expect(result.content).toBe(JSON.stringify({ tenantId: 'tenant_1', projects: 3 }));
      // Step bookkeeping never reaches the model.
      const seen = JSON.stringify(ctx.server.requests[1]!.messages);
      expect(seen).not.toContain('create-tenant');
      expect(seen).not.toContain('seed:website');
      expect(reply.text).toBe('工作空间已就绪。');

      // Step progress shows as the call's log events.
      const stepLines = logs
        .filter((event) => (event.attributes as Record<string, unknown>)?.toolCallId === 'toolu_prov1')
        .map((event) => event.message);
      expect(stepLines).toEqual([
        'step "create-tenant" completed',
        'step "seed:website" completed',
        'step "seed:api" completed',
        'step "seed:docs" completed',
      ]);
    } finally {
      unsubscribe();
    }
  });

  it('steps are scoped to one call: a second call runs all its steps fresh', async () => {
    await ctx.start([Onboarding]);
    ctx.server.script(
      { toolCalls: [{ id: 'toolu_provA', name: 'provision_workspace', arguments: { customerId: 'cus_a' } }] },
      { toolCalls: [{ id: 'toolu_provB', name: 'provision_workspace', arguments: { customerId: 'cus_b' } }] },
      { text: '两个都好了。' },
    );
    await dispatchAndRead(Onboarding, 'onb-2', '配置 cus_a 和 cus_b');

    expect(billing.calls).toEqual(['cus_a', 'cus_b']);
    expect(projects.calls).toHaveLength(2 * DEFAULT_PROJECTS.length);
    expect(toolResult(ctx.server.requests[1]!, 'toolu_provA').content).toBe('{"tenantId":"tenant_1","projects":3}');
    expect(toolResult(ctx.server.requests[2]!, 'toolu_provB').content).toBe('{"tenantId":"tenant_2","projects":3}');
  });

  it('two calls in one batch keep separate step records (same step names, different toolCallIds)', async () => {
    await ctx.start([Onboarding]);
    ctx.server.script(
      {
        toolCalls: [
          { id: 'toolu_p1', name: 'provision_workspace', arguments: { customerId: 'cus_x' } },
          { id: 'toolu_p2', name: 'provision_workspace', arguments: { customerId: 'cus_y' } },
        ],
      },
      { text: 'ok' },
    );
    await dispatchAndRead(Onboarding, 'onb-3', '配置 cus_x 和 cus_y');
    expect([...billing.calls].sort()).toEqual(['cus_x', 'cus_y']);
    expect(projects.calls).toHaveLength(2 * DEFAULT_PROJECTS.length);
    const second = ctx.server.requests[1]!;
    const tenants = [toolResult(second, 'toolu_p1').content, toolResult(second, 'toolu_p2').content]
      .map((content) => (JSON.parse(content) as { tenantId: string }).tenantId)
      .sort();
    expect(tenants).toEqual(['tenant_1', 'tenant_2']);
  });

  it('a throwing step settles the call as an ordinary tool error, with no automatic retry', async () => {
    const original = projects.seed;
    let failures = 0;
    projects.seed = async (tenantId, project) => {
      if (project.name === 'api') {
        failures += 1;
        throw new Error('project service unavailable');
      }
      return original(tenantId, project);
    };
    try {
      await ctx.start([Onboarding]);
      ctx.server.script(
        { toolCalls: [{ id: 'toolu_fail', name: 'provision_workspace', arguments: { customerId: 'cus_f' } }] },
        { text: '配置失败了。' },
      );
      const { reply } = await dispatchAndRead(Onboarding, 'onb-4', '配置 cus_f');
      expect(failures).toBe(1);
      expect(billing.calls).toEqual(['cus_f']);
      const result = toolResult(ctx.server.requests[1]!, 'toolu_fail');
      expect(result.isError).toBe(true);
      expect(result.content).toBe('project service unavailable');
      expect(reply.text).toBe('配置失败了。');
    } finally {
      projects.seed = original;
    }
  });
});
