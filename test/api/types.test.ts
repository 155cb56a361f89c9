/**
 * Compile-time contract of the public Agent API types, checked by `npx tsc --noEmit` (vitest only
 * needs the file to load; nothing here renders an agent). Each `@ts-expect-error` marks a usage
 * that must NOT compile: if it ever compiles, tsc reports the directive as unused.
 */
import { describe, expectTypeOf, it } from 'vitest';
import * as v from 'valibot';
import {
  defineTool,
  dispatch,
  getAgentInstance,
  init,
  useDataWriter,
  useInitialData,
  usePersistentState,
  useTool,
  type Agent,
  type AgentInstanceHandle,
  type AgentInstanceInfo,
  type AgentReply,
  type CallHandle,
  type DispatchReceipt,
  type FlueHarness,
  type PromptResponse,
  type PromptResultResponse,
  type StateSetter,
} from '@flue/runtime';

// Type-level only: these functions are declared, never called, so no hook runs outside a render.

describe('tool data inference', () => {
  it('defineTool infers data from the input schema', () => {
    defineTool({
      name: 'lookup',
      description: 'Look up.',
      input: v.object({ orderId: v.string(), limit: v.optional(v.number(), 10), tags: v.array(v.string()) }),
      run({ data }) {
        expectTypeOf(data).toEqualTypeOf<{ orderId: string; limit: number; tags: string[] }>();
        // @ts-expect-error -- orderId is a string
        const n: number = data.orderId;
        void n;
        // @ts-expect-error -- not declared in the schema
        void data.missing;
        return 'ok';
      },
    });
  });

  it('an inline useTool definition infers data the same way', () => {
    function Agent() {
      useTool({
        name: 'inline',
        description: 'Inline.',
        input: v.object({
          when: v.pipe(
            v.string(),
            v.transform((s) => new Date(s)),
          ),
        }),
        run({ data }) {
          expectTypeOf(data).toEqualTypeOf<{ when: Date }>();
          expectTypeOf(data.when).toEqualTypeOf<Date>();
        },
      });
      useTool({
        name: 'no_input',
        description: 'No input.',
        run(ctx) {
          expectTypeOf(ctx).not.toHaveProperty('data');
          // @ts-expect-error -- a tool without input has no data
          void ctx.data;
        },
      });
    }
    void Agent;
  });

  it('harness tools get a typed FlueHarness', () => {
    defineTool({
      name: 'review',
      description: 'Review.',
      harness: true,
      run({ harness }) {
        expectTypeOf(harness).toEqualTypeOf<FlueHarness>();
      },
    });
  });
});

describe('usePersistentState', () => {
  it('with a default: [T, StateSetter<T>], setter takes a value or an updater (prev: T) => T', () => {
    function Agent() {
      const [count, setCount] = usePersistentState('count', 0);
      expectTypeOf(count).toEqualTypeOf<number>();
      expectTypeOf(setCount).toEqualTypeOf<StateSetter<number>>();
      expectTypeOf(setCount).parameter(0).toEqualTypeOf<number | ((previous: number) => number)>();
      setCount(1);
      setCount((previous) => {
        expectTypeOf(previous).toEqualTypeOf<number>();
        return previous + 1;
      });
      // @ts-expect-error -- wrong value type
      setCount('one');
      // @ts-expect-error -- an updater must return T
      setCount((previous: number) => `${previous}`);

      const [items, setItems] = usePersistentState<string[]>('items', []);
      expectTypeOf(items).toEqualTypeOf<string[]>();
      setItems((previous) => [...previous, 'x']);
      // @ts-expect-error -- element type is string
      setItems([1]);
    }
    void Agent;
  });

  it('without a default: T | undefined', () => {
    function Agent() {
      const [note, setNote] = usePersistentState<string>('note');
      expectTypeOf(note).toEqualTypeOf<string | undefined>();
      expectTypeOf(setNote).toEqualTypeOf<StateSetter<string | undefined>>();
      setNote((previous) => {
        expectTypeOf(previous).toEqualTypeOf<string | undefined>();
        return `${previous ?? ''}!`;
      });
      const [unknownValue] = usePersistentState('anything');
      expectTypeOf(unknownValue).toEqualTypeOf<unknown>();
    }
    void Agent;
  });

  it('StateSetter<T> is (value: T | ((previous: T) => T)) => void', () => {
    expectTypeOf<StateSetter<boolean>>().toEqualTypeOf<(value: boolean | ((previous: boolean) => boolean)) => void>();
  });
});

describe('harness.prompt()', () => {
  it('with result: resolves to PromptResultResponse<InferOutput<schema>>', () => {
    async function use(harness: FlueHarness) {
      const schema = v.object({ severity: v.picklist(['low', 'high']), score: v.number() });
      const call = harness.prompt('Classify.', { result: schema });
      expectTypeOf(call).toEqualTypeOf<CallHandle<PromptResultResponse<{ severity: 'low' | 'high'; score: number }>>>();
      const response = await call;
      expectTypeOf(response).toEqualTypeOf<PromptResultResponse<{ severity: 'low' | 'high'; score: number }>>();
      expectTypeOf(response.data.severity).toEqualTypeOf<'low' | 'high'>();
      // @ts-expect-error -- a result response carries data, not text
      void response.text;
      // A non-object schema infers too, through transforms.
      const count = await harness.prompt('Count.', { result: v.pipe(v.string(), v.transform(Number)) });
      expectTypeOf(count.data).toEqualTypeOf<number>();
    }
    void use;
  });

  it('without result: resolves to PromptResponse', () => {
    async function use(harness: FlueHarness) {
      const call = harness.prompt('Summarize.');
      expectTypeOf(call).toEqualTypeOf<CallHandle<PromptResponse>>();
      expectTypeOf(call.signal).toEqualTypeOf<AbortSignal>();
      const response = await harness.prompt('Summarize.', { thinkingLevel: 'low' });
      expectTypeOf(response).toEqualTypeOf<PromptResponse>();
      expectTypeOf(response.text).toEqualTypeOf<string>();
      // @ts-expect-error -- a free-form response has no data
      void response.data;
      // @ts-expect-error -- not a thinking level
      void harness.prompt('x', { thinkingLevel: 'extreme' });
    }
    void use;
  });
});

describe('addressing API', () => {
  it('dispatch / init / read / getAgentInstance signatures', () => {
    function Support() {
      return 'Help.';
    }
    async function use() {
      expectTypeOf(dispatch(Support, { id: 'x', message: 'hi' })).toEqualTypeOf<Promise<DispatchReceipt>>();
      const handle = init(Support, { id: 'x', uid: null });
      expectTypeOf(handle).toEqualTypeOf<AgentInstanceHandle>();
      const receipt = await handle.dispatch({ message: { kind: 'signal', type: 'slack.message', body: 'hi' } });
      expectTypeOf(receipt.uid).toEqualTypeOf<string>();
      expectTypeOf(await handle.read(receipt)).toEqualTypeOf<AgentReply>();
      expectTypeOf(await handle.read(receipt.submissionId)).toEqualTypeOf<AgentReply>();
      expectTypeOf(await getAgentInstance(Support, 'x')).toEqualTypeOf<AgentInstanceInfo | null>();
      // @ts-expect-error -- the handle owns id/uid
      await handle.dispatch({ message: 'hi', uid: 'inst_x' });
      // @ts-expect-error -- id is required
      await dispatch(Support, { message: 'hi' });
      // @ts-expect-error -- unknown message kind
      await dispatch(Support, { id: 'x', message: { kind: 'bot', body: 'x' } });
      // @ts-expect-error -- uid is a string or null
      await dispatch(Support, { id: 'x', message: 'hi', uid: 5 });
    }
    void use;
  });

  it('agent statics and props', () => {
    function Issue(props: { id: string }) {
      const data = useInitialData<{ issue: number }>();
      expectTypeOf(data).toEqualTypeOf<{ issue: number }>();
      const write = useDataWriter('progress', { schema: v.object({ pct: v.number() }) });
      expectTypeOf(write).parameter(0).toEqualTypeOf<{ pct: number }>();
      return props.id;
    }
    Issue.agentName = 'issue-triage';
    Issue.initialData = v.object({ issue: v.number() });
    Issue.durability = { maxAttempts: 5, timeoutMs: 7_200_000 };
    expectTypeOf(Issue).toExtend<Agent>();
    function Tools() {}
    expectTypeOf(Tools).toExtend<Agent>();
    // @ts-expect-error -- agent functions are synchronous
    const asyncAgent: Agent = async () => 'x';
    void asyncAgent;
  });
});
