/**
 * Tools of the workerd harness-scope tests (test/workers/harness-scope.test.ts), mounted by the
 * `Studio` agent for `scope-*` ids. What the harness did is reported back as tool output, so the
 * test reads it from the model requests the scripted server recorded.
 */
import * as v from 'valibot';
import { type BashLike, type FlueHarness, type ShellResult, bash, defineTool, virtualSandbox } from '@flue/runtime';
import { laneRequests, until } from './lanes.ts';

export const HARNESS_SCOPE_LANE = 'harness-scope';

/** A JSON description of a rejection: what the test asserts on. */
function describe(error: unknown, reason?: unknown, signalReason?: unknown): Record<string, unknown> {
  const e = error as { name?: string; type?: string; cause?: { name?: string; type?: string } };
  return {
    name: e?.name,
    isDOMException: error instanceof DOMException,
    ...(e?.type === undefined ? {} : { type: e.type }),
    ...(e?.cause === undefined ? {} : { causeName: e.cause.name, ...(e.cause.type === undefined ? {} : { causeType: e.cause.type }) }),
    ...(signalReason === undefined ? {} : { causeIsSignalReason: e?.cause === signalReason }),
    ...(reason === undefined ? {} : { causeIsReason: e?.cause === reason }),
  };
}

const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => ({ resolved: true }),
    (error: unknown) => describe(error),
  );

/** Set when the `hang` command runs: the scratch model is then inside its `bash` tool call. */
let hanging = false;
// Cooperative like a real shell: the command ends when its signal aborts, rejecting with the reason.
const hang = ({ signal }: { signal: AbortSignal }): Promise<ShellResult> => {
  hanging = true;
  return new Promise<ShellResult>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
};
/** The sandbox of `scope-bash-*` instances: a `bash` whose `hang` command never returns. */
export const hangingSandbox = virtualSandbox({ commands: { hang } });

/**
 * The same through `bash(factory)`, the adapter of just-bash-compatible shells, for
 * `scope-bash-driver-*` instances: its `exec` runs until its signal aborts, then rejects with a
 * plain Error, as a shell interpreter stopping at a statement boundary does.
 */
const hangingShell: BashLike = {
  getCwd: () => '/workspace',
  exec(_command, options) {
    hanging = true;
    return new Promise<ShellResult>((_resolve, reject) =>
      options?.signal?.addEventListener('abort', () => reject(new Error('Execution aborted')), { once: true }),
    );
  },
  fs: {
    readFile: async () => '',
    readFileBuffer: async () => new Uint8Array(),
    writeFile: async () => {},
    stat: async () => ({ isFile: false, isDirectory: true }),
    readdir: async () => [],
    exists: async () => true,
    mkdir: async () => {},
    rm: async () => {},
    resolvePath: (base, p) => (p.startsWith('/') ? p : `${base}/${p}`),
  },
};
export const hangingShellSandbox = bash(() => hangingShell);

let timedOut: Promise<Record<string, unknown>> | undefined;
let stashed: FlueHarness | undefined;

export const scopeTools = [
  defineTool({
    name: 'slow_review',
    description: 'Review with a focused model operation.',
    harness: true,
    timeoutMs: 300,
    async run({ harness }) {
      const call = harness.prompt('Review the clause in depth.');
      timedOut = settled(call);
      return (await call).text;
    },
  }),
  defineTool({
    name: 'timeout_report',
    description: 'Report how the timed-out review ended.',
    async run() {
      return { output: await timedOut! };
    },
  }),
  defineTool({
    name: 'stash',
    description: 'Keep the harness for later.',
    harness: true,
    run({ harness }) {
      stashed = harness;
      return 'kept';
    },
  }),
  defineTool({
    name: 'reuse',
    description: 'Use the harness kept by an earlier call.',
    async run() {
      return { output: { prompt: await settled(stashed!.prompt('Still there?')), compact: await settled(stashed!.compact()) } };
    },
  }),
  defineTool({
    name: 'abort_in_bash',
    description: 'Twice: start a prompt whose model runs a command that never ends, and abort it meanwhile.',
    input: v.object({ reason: v.string() }),
    harness: true,
    async run({ harness, data }) {
      // The second prompt starts as soon as the first has rejected, as a caller that retries does.
      const outcomes: Record<string, unknown>[] = [];
      for (const attempt of [1, 2]) {
        hanging = false;
        const call = harness.prompt(`Run the long command (${attempt}).`);
        const rejected = call.then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        await Promise.race([until(() => (hanging ? true : undefined)), rejected]);
        call.abort(data.reason);
        const error = await rejected;
        outcomes.push({ ...describe(error, data.reason, call.signal.reason), message: (error as Error | undefined)?.message });
      }
      return { output: outcomes };
    },
  }),
  defineTool({
    name: 'abort_probe',
    description: 'Start a prompt and abort it mid-flight.',
    input: v.object({ via: v.picklist(['abort', 'signal']), reason: v.optional(v.string()) }),
    harness: true,
    async run({ harness, data }) {
      const controller = new AbortController();
      const before = (await laneRequests(HARNESS_SCOPE_LANE)).length;
      const call = harness.prompt('Think for a long time.', data.via === 'signal' ? { signal: controller.signal } : {});
      await until(async () => ((await laneRequests(HARNESS_SCOPE_LANE)).length > before ? true : undefined));
      const reason = data.reason === undefined ? undefined : new Error(data.reason);
      if (data.via === 'abort') call.abort(reason);
      else controller.abort(reason);
      const error = await call.then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      return { output: describe(error, reason, call.signal.reason) };
    },
  }),
];
