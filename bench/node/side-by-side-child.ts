/**
 * One measured process of the side-by-side benchmark (bench/node/side-by-side.ts spawns it):
 *
 *   node side-by-side-child.ts <ours|original|floor> <turns|fanout|cold> <model server url>
 *
 * It drives the same agent (one `lookup` tool, one scripted model) through one runtime and prints
 * one `@@result <json>` line. The model server runs in the parent, so its CPU and memory are not
 * this process's. Every reply is checked against the script (side-by-side-script.ts) and the tool
 * runs are counted, so a runtime that skipped work cannot look fast.
 *
 * - ours:     our runtime, through start()/init()/dispatch()/read() (bench/node/ours-runtime.ts)
 * - observed: ours with one `observe()` subscriber that receives every runtime event (what observing costs)
 * - original: the published @flue/runtime 2.1.0 through the same calls (bench/original/runtime.mjs)
 * - floor:    pi-ai 1.6.0's streaming client alone; the loop and the tool results are hand-written
 */
import {
  FANOUT_CONCURRENCY,
  FANOUT_CONVERSATIONS,
  MODEL_ID,
  PROVIDER_ID,
  SYSTEM_PROMPT,
  TEXT_CHUNKS,
  TOOL_DESCRIPTION,
  TOOL_NAME,
  TURNS,
  WARMUP_TURNS,
  expectedReply,
  question,
  toolOutput,
} from './side-by-side-script.ts';

type RuntimeName = 'ours' | 'observed' | 'original' | 'floor';
type Scenario = 'turns' | 'fanout' | 'cold';

interface Client {
  /** One user message on `conversation` (created on first use); resolves with the settled reply text. */
  ask(conversation: string, text: string): Promise<string>;
  readonly toolRuns: number;
  stop(): Promise<void>;
}

/** The subset of pi-ai both runtimes' createProvider calls need (0.83 and 1.6.0 agree on it). */
type CreateProvider = typeof import('./floor-client.ts').createProvider;
type AnthropicMessagesApi = typeof import('./floor-client.ts').anthropicMessages;

/** The same keyless provider for every runtime, built with that runtime's own pi-ai. */
function scriptedProvider(createProvider: CreateProvider, api: AnthropicMessagesApi, baseUrl: string) {
  return createProvider<'anthropic-messages'>({
    id: PROVIDER_ID,
    name: PROVIDER_ID,
    baseUrl,
    auth: { apiKey: { name: 'scripted', resolve: async () => ({ auth: { apiKey: 'scripted' }, source: 'scripted' }) } },
    models: [
      {
        id: MODEL_ID,
        name: MODEL_ID,
        api: 'anthropic-messages',
        provider: PROVIDER_ID,
        baseUrl,
        reasoning: false,
        input: ['text'],
        contextWindow: 200_000,
        maxTokens: 8192,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      },
    ],
    api,
  });
}

/** Runtime events the `observed` runtime's subscriber received. */
let observedEvents = 0;

async function frameworkClient(which: 'ours' | 'observed' | 'original', baseUrl: string): Promise<Client> {
  // The original is typed as ours: the claim under test is that both expose the same API.
  const mod: typeof import('./ours-runtime.ts') =
    which === 'original' ? await import(new URL('../original/runtime.mjs', import.meta.url).href) : await import('./ours-runtime.ts');
  if (which === 'observed') {
    // One subscriber of every event that does what a cheap real one does: looks at each event.
    mod.observe((event) => {
      if (event.type !== '') observedEvents += 1;
    });
  }
  const { start, init, defineTool, useModel, useTool, createProvider, anthropicMessages, v } = mod;
  let toolRuns = 0;
  const lookup = defineTool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    input: v.object({ key: v.string() }),
    async run({ data }) {
      toolRuns += 1;
      return { output: toolOutput(data.key) };
    },
  });
  function BenchAgent(): string {
    useModel(`${PROVIDER_ID}/${MODEL_ID}`);
    useTool(lookup);
    return SYSTEM_PROMPT;
  }
  const flue = await start({
    agents: [BenchAgent],
    providers: [scriptedProvider(createProvider, anthropicMessages, baseUrl)],
  });
  const handles = new Map<string, ReturnType<typeof init>>();
  return {
    get toolRuns() {
      return toolRuns;
    },
    async ask(conversation, text) {
      let handle = handles.get(conversation);
      if (handle === undefined) handles.set(conversation, (handle = init(BenchAgent, { id: conversation })));
      const receipt = await handle.dispatch(text);
      const reply = await handle.read(receipt);
      return reply.text;
    },
    stop: () => flue.stop(),
  };
}

async function floorClient(baseUrl: string): Promise<Client> {
  const { createModels, createProvider, anthropicMessages } = await import('./floor-client.ts');
  type Message = Parameters<ReturnType<typeof createModels>['streamSimple']>[1]['messages'][number];
  const models = createModels();
  models.setProvider(scriptedProvider(createProvider, anthropicMessages, baseUrl));
  const model = models.getModel(PROVIDER_ID, MODEL_ID);
  if (model === undefined) throw new Error('floor: scripted model not registered');
  const tools = [
    {
      name: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    },
  ];
  const conversations = new Map<string, Message[]>();
  let toolRuns = 0;
  return {
    get toolRuns() {
      return toolRuns;
    },
    async ask(conversation, text) {
      let messages = conversations.get(conversation);
      if (messages === undefined) conversations.set(conversation, (messages = []));
      messages.push({ role: 'user', content: text, timestamp: Date.now() });
      for (;;) {
        const stream = models.streamSimple(model, { systemPrompt: SYSTEM_PROMPT, messages, tools });
        let reply = '';
        for await (const event of stream) if (event.type === 'text_delta') reply += event.delta;
        const message = await stream.result();
        if (message.stopReason === 'error' || message.stopReason === 'aborted') {
          throw new Error(`floor: model call failed: ${message.errorMessage ?? message.stopReason}`);
        }
        messages.push(message);
        const calls = message.content.filter((part) => part.type === 'toolCall');
        if (calls.length === 0) return reply;
        for (const call of calls) {
          toolRuns += 1;
          const output = toolOutput(String(call.arguments.key));
          messages.push({
            role: 'toolResult',
            toolCallId: call.id,
            toolName: call.name,
            content: [{ type: 'text', text: JSON.stringify(output) }],
            isError: false,
            timestamp: Date.now(),
          });
        }
      }
    },
    stop: async () => {},
  };
}

function check(reply: string, key: string): void {
  const expected = expectedReply(key);
  if (reply !== expected) {
    throw new Error(
      `reply for ${key} is not the scripted text (${TEXT_CHUNKS} chunks):\n  got      ${JSON.stringify(reply.slice(0, 120))}… (${reply.length} chars)\n  expected ${JSON.stringify(expected.slice(0, 120))}… (${expected.length} chars)`,
    );
  }
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** Peak resident set size of this process so far, in MiB (getrusage's ru_maxrss). */
function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}

async function main(): Promise<void> {
  const [runtime, scenario, baseUrl] = process.argv.slice(2) as [RuntimeName, Scenario, string];
  if (!['ours', 'observed', 'original', 'floor'].includes(runtime) || !['turns', 'fanout', 'cold'].includes(scenario) || !baseUrl) {
    throw new Error('usage: side-by-side-child.ts <ours|observed|original|floor> <turns|fanout|cold> <model server url>');
  }
  const client = runtime === 'floor' ? await floorClient(baseUrl) : await frameworkClient(runtime, baseUrl);
  // Process start (performance's time origin) → imports done and the runtime started.
  const loadedMs = performance.now();
  let expectedToolRuns = 0;
  const ask = async (conversation: string, key: string): Promise<void> => {
    check(await client.ask(conversation, question(key)), key);
    expectedToolRuns += 1;
  };
  let result: Record<string, unknown>;

  if (scenario === 'cold') {
    await ask('cold', 'cold-1');
    // The parent stops its clock when it reads this line.
    process.stdout.write('@@settled\n');
    result = { loadedMs, exchangeMs: performance.now() - loadedMs };
  } else {
    // A few discarded turns on a conversation of their own, so first-call costs (lazy imports, JIT
    // of both the new-conversation and the follow-up paths) are the cold-start figure's business,
    // and turn 1 below is a fair yardstick for turns 16–20.
    for (let turn = 1; turn <= WARMUP_TURNS; turn++) await ask('warmup', `w${turn}`);
    if (scenario === 'turns') {
      const wallMs: number[] = [];
      const turnCpuMs: number[] = [];
      const eventsBefore = observedEvents;
      for (let turn = 1; turn <= TURNS; turn++) {
        const cpu = process.cpuUsage();
        const started = performance.now();
        await ask('conversation', `t${turn}`);
        wallMs.push(performance.now() - started);
        turnCpuMs.push(cpuMs(cpu));
      }
      result = { wallMs, cpuMs: turnCpuMs, peakRssMiB: peakRssMiB(), eventsPerTurn: (observedEvents - eventsBefore) / TURNS };
    } else {
      const cpu = process.cpuUsage();
      const started = performance.now();
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < FANOUT_CONVERSATIONS) {
          const n = next++;
          await ask(`fan-${n}`, `f${n}`);
        }
      };
      await Promise.all(Array.from({ length: FANOUT_CONCURRENCY }, worker));
      result = { wallMs: performance.now() - started, cpuMs: cpuMs(cpu), peakRssMiB: peakRssMiB() };
    }
  }
  if (client.toolRuns !== expectedToolRuns) {
    throw new Error(`the lookup tool ran ${client.toolRuns} times for ${expectedToolRuns} exchanges`);
  }
  process.stdout.write(`@@result ${JSON.stringify({ ...result, toolRuns: client.toolRuns })}\n`);
  await client.stop();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
