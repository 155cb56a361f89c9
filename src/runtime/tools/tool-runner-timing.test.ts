/** The tool runner under time: timeouts, host aborts, harness and durable tools, standalone calls. */
import { describe, expect, it, vi } from 'vitest';
import * as v from 'valibot';
import { defineTool } from '../authoring/define-tool.ts';
import type { ToolDefinition, ToolStep } from '../authoring/define-tool.ts';
import { ToolInputValidationError, ToolTimeoutError } from '../common/errors.ts';
import { SUFFIX, environment, expectError, sleep } from './tool-runner.fixtures.ts';
import { invokeTool, raceToolRun, runToolCall } from './tool-runner.ts';
import type { ToolOutcome } from './tool-runner.ts';
import type { FlueHarness } from '../common/types.ts';

/** A promise and the function that resolves it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('runToolCall — timeout', () => {
  it('aborts the tool signal and settles with the exact timeout text', async () => {
    let reason: unknown;
    let lateSettled = false;
    const tool = defineTool({
      name: 'slow',
      description: 'Slow.',
      timeoutMs: 20,
      run: ({ signal }) =>
        new Promise<string>((resolve) => {
          signal?.addEventListener('abort', () => {
            reason = signal.reason;
          });
          // Settles long after the deadline: must be discarded.
          setTimeout(() => {
            lateSettled = true;
            resolve('late');
          }, 60);
        }),
    });
    const outcome = await runToolCall(tool, {}, environment());
    const error = expectError(outcome, ToolTimeoutError, 'tool_timeout');
    expect(outcome.content).toBe('Tool "slow" timed out after 20ms');
    expect(error.meta).toEqual({ tool: 'slow', timeoutMs: 20 });
    expect(reason).toBe(error);
    expect(outcome.aborted).toBeUndefined();
    expect(outcome.durationMs).toBeGreaterThanOrEqual(15);
    // The late result arrives after the outcome and changes nothing.
    await vi.waitUntil(() => lateSettled, { timeout: 60_000 });
    expect(outcome.content).toBe('Tool "slow" timed out after 20ms');
  });

  it('fires exactly at its deadline, not later (fake timers)', async () => {
    vi.useFakeTimers();
    try {
      let reason: unknown;
      const tool = defineTool({
        name: 'stuck',
        description: 'Never settles.',
        timeoutMs: 1_000,
        run: ({ signal }) =>
          new Promise<string>(() => {
            signal?.addEventListener('abort', () => (reason = signal.reason));
          }),
      });
      let outcome: ToolOutcome | undefined;
      void runToolCall(tool, {}, environment()).then((settled) => (outcome = settled));
      await vi.advanceTimersByTimeAsync(999);
      expect(outcome).toBeUndefined();
      expect(reason).toBeUndefined();
      // One more millisecond reaches the deadline: the call settles as a timeout right then.
      await vi.advanceTimersByTimeAsync(1);
      expect(outcome).toBeDefined();
      const error = expectError(outcome!, ToolTimeoutError, 'tool_timeout');
      expect(reason).toBe(error);
      expect(outcome!.durationMs).toBe(1_000);
    } finally {
      vi.useRealTimers();
    }
  });

  it('discards a late rejection after a timeout (no unhandled rejection)', async () => {
    const late = deferred();
    const tool = defineTool({
      name: 'slow_reject',
      description: 'Slow.',
      timeoutMs: 20,
      run: ({ signal }) =>
        new Promise<string>((_, reject) => {
          signal?.addEventListener('abort', () =>
            setTimeout(() => {
              reject(new Error('late failure'));
              late.resolve();
            }, 10),
          );
        }),
    });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome.error).toBeInstanceOf(ToolTimeoutError);
    // An unhandled rejection would be reported within this test: the rejection has happened and
    // one macrotask has passed.
    await late.promise;
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('does not fire once the tool has finished: its timer is cleared', async () => {
    vi.useFakeTimers();
    try {
      const tool = defineTool({ name: 'fast', description: 'Fast.', timeoutMs: 20, run: () => 'quick' });
      expect((await runToolCall(tool, {}, environment())).content).toBe('"quick"');
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('runToolCall — host abort', () => {
  it('settles with the tool rejection when the tool honours its signal', async () => {
    const host = new AbortController();
    const tool = defineTool({
      name: 'fetcher',
      description: 'Fetches.',
      run: ({ signal }) =>
        new Promise<string>((_, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason));
        }),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    const reason = new DOMException('Submission aborted.', 'AbortError');
    setTimeout(() => host.abort(reason), 5);
    const outcome = await pending;
    expect(outcome).toMatchObject({ isError: true, aborted: true, content: 'Submission aborted.' });
    expect(outcome.error).toBe(reason);
  });

  it('abandons a tool that ignores the abort after one macrotask', async () => {
    const host = new AbortController();
    let resolveLate: (value: string) => void = () => {};
    const tool = defineTool({
      name: 'stubborn',
      description: 'Ignores aborts.',
      run: () => new Promise<string>((resolve) => (resolveLate = resolve)),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    setTimeout(() => host.abort(), 5);
    const outcome = await pending;
    expect(outcome.isError).toBe(true);
    expect(outcome.aborted).toBe(true);
    expect(outcome.error).toBeInstanceOf(DOMException);
    expect((outcome.error as DOMException).name).toBe('AbortError');
    expect(outcome.content).toBe(`Tool "stubborn" was aborted.${SUFFIX}`);
    expect(outcome.content.endsWith(SUFFIX)).toBe(true);
    resolveLate('too late'); // discarded
  });

  it('swallows the late rejection of an abandoned tool', async () => {
    const host = new AbortController();
    const late = deferred();
    const tool = defineTool({
      name: 'stubborn_reject',
      description: 'Ignores aborts, then fails.',
      run: () =>
        new Promise<string>((_, reject) =>
          setTimeout(() => {
            reject(new Error('late'));
            late.resolve();
          }, 20),
        ),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    host.abort();
    expect((await pending).content.endsWith(SUFFIX)).toBe(true);
    // The late rejection has happened and one macrotask has passed: unhandled, it would fail here.
    await late.promise;
    await new Promise((resolve) => setImmediate(resolve));
  });

  it('wins over a timeout that would fire in the same moment', async () => {
    const host = new AbortController();
    // Registered before the tool's own 20ms deadline, so the host abort lands first.
    setTimeout(() => host.abort(), 20);
    const tool = defineTool({
      name: 'racing',
      description: 'Races.',
      timeoutMs: 20,
      run: () => new Promise<string>(() => {}),
    });
    const outcome = await runToolCall(tool, {}, environment({ signal: host.signal }));
    expect(outcome.error).not.toBeInstanceOf(ToolTimeoutError);
    expect((outcome.error as DOMException).name).toBe('AbortError');
    expect(outcome.aborted).toBe(true);
    // A timer of the same delay registered after the tool's deadline fires after it would have.
    await new Promise((resolve) => setTimeout(resolve, 20));
  });

  it('keeps a result that settles within the grace period', async () => {
    const host = new AbortController();
    const tool = defineTool({
      name: 'finishing',
      description: 'Finishes anyway.',
      run: ({ signal }) => new Promise<string>((resolve) => signal?.addEventListener('abort', () => resolve('finished'))),
    });
    const pending = runToolCall(tool, {}, environment({ signal: host.signal }));
    setTimeout(() => host.abort(), 5);
    expect(await pending).toMatchObject({ isError: false, content: '"finished"' });
  });

  it('never starts a tool when the host already aborted', async () => {
    const host = new AbortController();
    host.abort();
    const run = vi.fn(() => 'ran');
    const outcome = await runToolCall(returningFn(run), {}, environment({ signal: host.signal }));
    expect(run).not.toHaveBeenCalled();
    expect(outcome).toMatchObject({ isError: true, aborted: true, content: 'Tool "fn" was aborted before it started.' });
    expect((outcome.error as DOMException).name).toBe('AbortError');
  });
});

function returningFn(run: () => unknown): ToolDefinition {
  return defineTool({ name: 'fn', description: 'Fn.', run } as never);
}

describe('runToolCall — harness and durable tools', () => {
  const harness = { name: 'default' } as FlueHarness;

  it('materializes the harness lazily for harness tools only', async () => {
    const factory = vi.fn(() => harness);
    let seen: unknown;
    const tool = defineTool({
      name: 'review',
      description: 'Review.',
      harness: true,
      run(ctx) {
        expect(factory).not.toHaveBeenCalled();
        seen = ctx.harness;
        void ctx.harness;
      },
    });
    await runToolCall(tool, {}, environment({ harness: factory }));
    expect(seen).toBe(harness);
    expect(factory).toHaveBeenCalledTimes(1);

    const untouched = defineTool({ name: 'untouched', description: 'Untouched.', harness: true, run: () => 'ok' });
    const lazy = vi.fn(() => harness);
    await runToolCall(untouched, {}, environment({ harness: lazy }));
    expect(lazy).not.toHaveBeenCalled();
  });

  it('fails a harness tool outside an agent session without running it', async () => {
    const run = vi.fn(() => 'ran');
    const tool = defineTool({ name: 'review', description: 'Review.', harness: true, run });
    const outcome = await runToolCall(tool, {}, environment());
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^\[flue\] Tool "review" declares harness: true and can only run inside an agent session/);
    expect(run).not.toHaveBeenCalled();
  });

  it('passes the step to durable tools and requires one', async () => {
    const step: ToolStep = { do: async (_name, fn) => fn() };
    const tool = defineTool({
      name: 'provision',
      description: 'Provision.',
      input: v.object({ id: v.string() }),
      durable: true,
      async run({ data, step: s }) {
        const tenant = await s.do('create', () => ({ tenant: data.id }));
        return { output: tenant };
      },
    });
    expect((await runToolCall(tool, { id: 'c1' }, environment({ step }))).output).toEqual({ tenant: 'c1' });
    const missing = await runToolCall(tool, { id: 'c1' }, environment());
    expect(missing.content).toMatch(/^\[flue\] Tool "provision" declares durable: true and needs a step/);
  });
});

describe('invokeTool', () => {
  const tool = defineTool({
    name: 'lookup',
    description: 'Lookup.',
    input: v.object({ id: v.string() }),
    output: v.object({ id: v.string() }),
    run: ({ data, toolCallId }) => ({ output: { id: `${data.id}:${toolCallId.startsWith('call_')}` }, terminate: true }),
  });

  it('returns the canonical result with a synthesized call id', async () => {
    const result = await invokeTool(tool, { id: 'a' });
    expect(result).toEqual({ output: { id: 'a:true' }, terminate: true });
  });

  it('propagates errors instead of returning them', async () => {
    await expect(invokeTool(tool, { id: 1 })).rejects.toBeInstanceOf(ToolInputValidationError);
    const failing = defineTool({
      name: 'failing',
      description: 'Fails.',
      run() {
        throw new Error('nope');
      },
    });
    await expect(invokeTool(failing)).rejects.toThrow('nope');
    const slow = defineTool({ name: 'slow', description: 'Slow.', timeoutMs: 20, run: () => new Promise<string>(() => {}) });
    await expect(invokeTool(slow)).rejects.toThrow('Tool "slow" timed out after 20ms');
  });

  it('synthesizes a unique call id per invocation', async () => {
    const ids: string[] = [];
    const capture = defineTool({
      name: 'capture',
      description: 'Capture.',
      run: ({ toolCallId }) => {
        ids.push(toolCallId);
      },
    });
    await invokeTool(capture);
    await invokeTool(capture);
    expect(new Set(ids).size).toBe(2);
  });
});

describe('raceToolRun', () => {
  it('resolves with the work result and ignores the deadline afterwards', async () => {
    const result = await raceToolRun(async () => 7, {
      label: 'Work',
      signal: new AbortController().signal,
      timeoutMs: 10,
      timeoutError: () => new Error('timeout'),
    });
    expect(result).toBe(7);
  });

  it('skips deadlines beyond the timer range instead of firing at once', async () => {
    const result = await raceToolRun(() => sleep(10).then(() => 'ok'), {
      label: 'Work',
      signal: new AbortController().signal,
      timeoutMs: 2 ** 31,
      timeoutError: () => new Error('timeout'),
    });
    expect(result).toBe('ok');
  });
});
