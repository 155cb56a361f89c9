/**
 * A harness is scoped to its tool call, on the Cloudflare host (the Node side is
 * test/harness-scope.test.ts): a timed-out harness tool's prompt is aborted and the scratch
 * conversation calls no model afterwards; a harness kept past its call refuses later operations
 * with `HarnessClosedError`; aborting a prompt rejects with an `AbortError` DOMException whose
 * `cause` is the reason. The tools report what they saw as their output.
 */
import { afterEach, beforeEach, expect, test } from 'vitest';
import { init } from '@flue/runtime';
import type { RecordedRequest } from '@flue/runtime/testing';
import { Studio } from './skills-subagents-agents.ts';
import { HARNESS_SCOPE_LANE } from './harness-scope-agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';
import './worker.ts';

const LANE = HARNESS_SCOPE_LANE;

beforeEach(async () => resetLane(LANE));
afterEach(async () => resetLane(LANE));

const toolOutput = (request: RecordedRequest) => JSON.parse(request.messages.findLast((m) => m.role === 'tool')!.content) as unknown;

test('a timed-out harness tool aborts its hung prompt: the prompt rejects with an AbortError caused by the timeout, and no model call follows', async () => {
  await scriptLane(
    LANE,
    { toolCalls: [{ name: 'slow_review', arguments: {} }] },
    { text: ['Looking'], hangAfterChunks: 3 },
    { toolCalls: [{ name: 'timeout_report', arguments: {} }] },
    { text: 'Reviewed.' },
  );
  const handle = init(Studio, { id: 'scope-timeout' });
  expect((await handle.read(await handle.dispatch('Review clause 7'))).text).toBe('Reviewed.');
  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(4);
  expect(requests[2]!.messages.findLast((m) => m.role === 'tool')!.content).toContain('timed out after 300ms');
  expect(toolOutput(requests[3]!)).toEqual({
    name: 'AbortError',
    isDOMException: true,
    causeName: 'ToolTimeoutError',
    causeType: 'tool_timeout',
  });
});

test('a harness kept past its tool call refuses later operations with HarnessClosedError', async () => {
  await scriptLane(
    LANE,
    { toolCalls: [{ name: 'stash', arguments: {} }] },
    { toolCalls: [{ name: 'reuse', arguments: {} }] },
    { text: 'Done.' },
  );
  const handle = init(Studio, { id: 'scope-stash' });
  expect((await handle.read(await handle.dispatch('Go'))).text).toBe('Done.');
  const requests = await laneRequests(LANE);
  expect(requests).toHaveLength(3);
  const closed = { name: 'HarnessClosedError', isDOMException: false, type: 'harness_closed', causeName: 'AbortError' };
  expect(toolOutput(requests[2]!)).toEqual({ prompt: closed, compact: closed });
});

test('aborting harness.prompt() through abort() or options.signal rejects with an AbortError whose cause is the reason', async () => {
  const handle = init(Studio, { id: 'scope-abort' });
  const cases = [{ via: 'abort', reason: 'changed my mind' }, { via: 'abort' }, { via: 'signal', reason: 'user left' }, { via: 'signal' }];
  for (const args of cases) {
    await resetLane(LANE);
    await scriptLane(
      LANE,
      { toolCalls: [{ name: 'abort_probe', arguments: args }] },
      { text: ['Hmm'], hangAfterChunks: 2 },
      { text: 'ok' },
    );
    expect((await handle.read(await handle.dispatch('Probe'))).text).toBe('ok');
    const requests = await laneRequests(LANE);
    expect(requests).toHaveLength(3);
    // Without a reason the cause is the platform's default reason, itself an AbortError.
    expect(toolOutput(requests[2]!)).toEqual({
      name: 'AbortError',
      isDOMException: true,
      causeName: args.reason === undefined ? 'AbortError' : 'Error',
      causeIsSignalReason: true,
      ...(args.reason === undefined ? {} : { causeIsReason: true }),
    });
  }
});

test('aborting harness.prompt() while its model is inside a bash tool call rejects at once with an AbortError whose cause is the reason, and the next prompt runs', async () => {
  // virtualSandbox()'s bash, and a just-bash-compatible shell through bash(factory). The tool
  // aborts a prompt, then starts the next one at once and aborts that too inside its bash call.
  for (const id of ['scope-bash-abort', 'scope-bash-driver-abort']) {
    await resetLane(LANE);
    await scriptLane(
      LANE,
      { toolCalls: [{ name: 'abort_in_bash', arguments: { reason: 'user-cancel' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'hang' } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'hang' } }] },
      { text: 'ok' },
    );
    const handle = init(Studio, { id });
    expect((await handle.read(await handle.dispatch('Probe'))).text).toBe('ok');
    const requests = await laneRequests(LANE);
    expect(requests).toHaveLength(4);
    const aborted = {
      name: 'AbortError',
      isDOMException: true,
      causeName: undefined,
      causeIsSignalReason: true,
      causeIsReason: true,
      message: 'harness.prompt() was aborted.',
    };
    expect(toolOutput(requests[3]!)).toEqual([aborted, aborted]);
  }
});
