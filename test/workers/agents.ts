/** Agents the workerd tests drive. Each uses its own scripted-model lane (its model id). */
import * as v from 'valibot';
import {
  type TimerHandle,
  defineSubagent,
  useApprovalGate,
  defineTool,
  useModel,
  usePersistentState,
  useSandbox,
  useSubagent,
  useTimer,
  useTool,
  virtualSandbox,
} from '@flue/runtime';
import { getDurableObjectIdentity } from '@flue/runtime/cloudflare';

export const ECHO_LANE = 'echo';
export const PROVISION_LANE = 'provision';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up.',
  input: v.object({ key: v.string() }),
  async run({ data, log }) {
    log.info('looked up', { key: data.key });
    return { output: { key: data.key, value: `value-of-${data.key}` } };
  },
});

/** The delegate of the subagent test: its own instructions and the `lookup` tool. */
const researcher = defineSubagent({
  name: 'researcher',
  description: 'Looks keys up and reports.',
  agent() {
    useTool(lookup);
    return 'You research keys.';
  },
});

/** Answers the Durable Object identity the tool runs under. */
const whereabouts = defineTool({
  name: 'whereabouts',
  description: 'Says which object runs this conversation.',
  run: () => ({ output: getDurableObjectIdentity() }),
});

/**
 * Holds a `crawl` call after its first line until the test, having seen that line's progress chunk,
 * opens it. A flag the tool polls, not a promise: a promise made inside the Durable Object cannot be
 * resolved from the test's context, though both share the isolate.
 */
const crawlGate = { open: false };
export const openCrawlGate = (): void => {
  crawlGate.open = true;
};

const crawl = defineTool({
  name: 'crawl',
  description: 'Crawls pages, telling its progress.',
  input: v.object({}),
  async run({ log }) {
    crawlGate.open = false;
    log.info('page 1 fetched');
    while (!crawlGate.open) await new Promise((resolve) => setTimeout(resolve, 10));
    log.info('page 2 fetched');
    return 'crawled';
  },
});

const delegateFiles = virtualSandbox({ files: { '/workspace/pkg/notes.txt': 'notes of pkg' } });

/** `remind` schedules a `useTimer()` timer of the conversation. */
function useRemindTool(timers: TimerHandle): void {
  useTool({
    name: 'remind',
    description: 'Schedules a reminder.',
    input: v.object({ name: v.string(), inMs: v.number() }),
    run({ data }) {
      return timers.schedule(data.name, { inMs: data.inMs, body: `${data.name} is due.` }).dueAt;
    },
  });
}

/** Refunds the shipped approval gate of `approve-` instances ran, in this isolate. */
export const refunds: { order: string; approvalId: string }[] = [];

/** `approve-` instances gate `refund` (expiring after 800 ms for `approve-fast-` ones, else a minute). */
function useRefundGate(id: string): void {
  useApprovalGate({
    name: 'refund',
    description: 'Refund an order.',
    input: v.object({ order: v.string() }),
    expiresInMs: id.startsWith('approve-fast-') ? 800 : 60_000,
    async execute({ order }, approvalId) {
      refunds.push({ order, approvalId });
      return `Refunded ${order}.`;
    },
  });
}

/**
 * Instances whose id starts with `delegate-` also declare the `researcher` subagent; `delegate-ws`
 * ones also a durable virtual sandbox (for `task` calls with a `cwd`); `progress-` ones (also after
 * another prefix: `approve-fast-progress-…`) `crawl`;
 * `timer-` ones `remind`; `approve-` ones the `refund` approval gate; `where-` ones `whereabouts`.
 */
export function Echo(props: { id: string }) {
  useModel(`scripted/${ECHO_LANE}`);
  useTool(lookup);
  if (props.id.startsWith('delegate-')) useSubagent(researcher);
  if (props.id.startsWith('delegate-ws')) useSandbox(delegateFiles);
  if (/(^|-)progress-/.test(props.id)) useTool(crawl);
  if (props.id.startsWith('timer-')) useRemindTool(useTimer());
  if (props.id.startsWith('approve-')) useRefundGate(props.id);
  if (props.id.startsWith('where-')) useTool(whereabouts);
  return 'Answer briefly.';
}

/** Side effects of durable steps, counted per isolate (each step records the isolate's run). */
export const stepRuns: string[] = [];

const provision = defineTool({
  name: 'provision',
  description: 'Provision a workspace in three steps.',
  input: v.object({ customer: v.string() }),
  durable: true,
  async run({ data, step }) {
    const tenant = await step.do('tenant', () => {
      stepRuns.push('tenant');
      return `tenant-${data.customer}`;
    });
    const seeded = await step.do('seed', async () => {
      stepRuns.push('seed');
      // Slow enough for a test to reset the object while this step runs.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return 3;
    });
    return { output: { tenant, seeded } };
  },
});

export function Provisioner() {
  useModel(`scripted/${PROVISION_LANE}`);
  const [count, setCount] = usePersistentState('provisioned', 0);
  useTool(provision);
  useTool({
    name: 'count_up',
    description: 'Count one more provisioned workspace.',
    async run() {
      setCount((previous) => previous + 1);
      return `count is now ${count + 1}`;
    },
  });
  return 'Provision workspaces.';
}

export const WORKSPACE_LANE = 'workspace';

const workspaceFiles = virtualSandbox({ files: { '/workspace/README.md': '# Workspace\n' } });

/** An agent with the in-memory virtual sandbox and its built-in file and shell tools. */
export function Workspace() {
  useModel(`scripted/${WORKSPACE_LANE}`);
  useSandbox(workspaceFiles);
  return 'Work in the workspace.';
}

export const LOAD_LANE = 'load';

/**
 * The load agent's `hold` tool calls: how many started, and how many the test released (in call
 * order). The Durable Object runs in the test's isolate, so a test can send deliveries while a
 * response is held mid-turn, then let it reach its turn boundary. The tool polls a counter rather
 * than awaiting a promise: a promise created in the object's context cannot be resolved from the
 * test's.
 */
export const holds = { started: 0, released: 0 };

/** The load test's agent: `hold` is its only tool. */
export function Load() {
  useModel(`scripted/${LOAD_LANE}`);
  useTool({
    name: 'hold',
    description: 'Waits until released.',
    async run() {
      const call = holds.started++;
      while (holds.released <= call) await new Promise((resolve) => setTimeout(resolve, 5));
      return 'released';
    },
  });
  return 'Answer briefly.';
}

export const TICKER_LANE = 'ticker';

/**
 * One entry per `tick` call, in call order: the call waits until the test calls its `release`.
 * Tools run in the test's isolate, so a test can hold an alarm pass inside a tool.
 */
export const ticks: { release(): void }[] = [];

/** An agent whose Durable Object (FlueTickerAgent) has a zero slice budget: it yields after every turn. */
export function Ticker() {
  useModel(`scripted/${TICKER_LANE}`);
  useTool({
    name: 'tick',
    description: 'Tick once.',
    input: v.object({}),
    async run() {
      await new Promise<void>((release) => ticks.push({ release }));
      return 'tock';
    },
  });
  return 'Tick when asked.';
}

export const STALL_LANE = 'stall';

/**
 * Short attempt bounds for the hung-call tests: a stream idle for 300 ms abandons its attempt, and
 * the submission ends 2 s after its first attempt started.
 */
export function Staller() {
  useModel(`scripted/${STALL_LANE}`);
  return 'Answer.';
}
Staller.durability = { timeoutMs: 2000, maxAttempts: 2, modelIdleTimeoutMs: 300 };

export const SPEND_PROVIDER = 'priced';
export const SPEND_LANE = 'spend';

const note = defineTool({ name: 'note', description: 'Takes a note.', run: () => 'noted' });

/**
 * A priced model ($3 / $15 per million input / output tokens) under budgets of 110 tokens per
 * submission and per conversation: one scripted call of 100 + 10 tokens uses either up.
 */
/** A tool whose work is a model call of its own, in the harness's scratch conversation. */
const ponder = defineTool({
  name: 'ponder',
  description: 'Thinks it over with a focused model call.',
  harness: true,
  async run({ harness }) {
    return (await harness.prompt('think it over')).text;
  },
});

export function Spender() {
  useModel(`${SPEND_PROVIDER}/${SPEND_LANE}`);
  useTool(note);
  useTool(ponder);
  return 'Answer.';
}
Spender.budget = { perSubmission: { maxTokens: 110 }, perConversation: { maxTokens: 110 } };

export const FORK_LANE = 'fork';

/** Counts in persistent state and can stash a large value there (a fork's export then crosses RPC as a stream). */
export function Brancher() {
  useModel(`scripted/${FORK_LANE}`);
  const [count, setCount] = usePersistentState('count', 0);
  const [, setStash] = usePersistentState('stash', '');
  useTool({ name: 'bump', description: 'Adds one.', run: () => (setCount((n) => n + 1), 'bumped') });
  useTool({
    name: 'stash',
    description: 'Stashes a large value.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => (setStash('x'.repeat(data.bytes)), 'stashed'),
  });
  return `Count: ${count}.`;
}
