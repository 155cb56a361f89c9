/**
 * Ours' own CPU per exchange, without the network: pi-ai's faux provider stands in for the model
 * server, so what is left is the runtime's work (ours) or the hand-written tool loop (floor) around
 * the same streamed replies. Each round runs both in fresh processes, alternating; it prints the
 * mean CPU per exchange of each and their difference. Not part of `npm run bench`.
 *
 *   npx node bench/node/faux-overhead.ts [rounds=6] [exchanges=500]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPLY = 'The lookup says the value is fine and here is a long answer. '.repeat(20);
const SYSTEM_PROMPT = 'You are a careful assistant. Use the lookup tool, then answer.';
const WARMUP = 10;
const CONCURRENCY = 8;

async function child(which: 'ours' | 'floor', exchanges: number): Promise<number> {
  const { fauxProvider, fauxAssistantMessage, fauxToolCall } = await import('@earendil-works/pi-ai/providers/faux');
  const faux = fauxProvider({
    provider: 'faux',
    models: [{ id: 'm', contextWindow: 200_000, maxTokens: 8192 }],
    tokenSize: { min: 6, max: 6 },
  });
  // A tool call, then the reply once the tool's result is in: two model calls an exchange.
  const respond = (context: { messages: { role: string }[] }) =>
    context.messages.at(-1)?.role === 'toolResult'
      ? fauxAssistantMessage(REPLY)
      : fauxAssistantMessage([fauxToolCall('lookup', { key: 'k' })], { stopReason: 'toolUse' });
  faux.setResponses(Array.from({ length: 2 * (exchanges + WARMUP) + 10 }, () => respond));
  let ask: (id: string) => Promise<string>;
  if (which === 'ours') {
    const { start } = await import('@flue/runtime/node');
    const { defineTool, init, useModel, useTool } = await import('@flue/runtime');
    const v = await import('valibot');
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a key up.',
      input: v.object({ key: v.string() }),
      async run({ data }) {
        return { output: { key: data.key, value: 42 } };
      },
    });
    function FauxAgent(): string {
      useModel('faux/m');
      useTool(lookup);
      return SYSTEM_PROMPT;
    }
    await start({ agents: [FauxAgent], providers: [faux.provider] });
    ask = async (id) => {
      const handle = init(FauxAgent, { id });
      return (await handle.read(await handle.dispatch('q'))).text;
    };
  } else {
    const { createModels } = await import('@earendil-works/pi-ai');
    type Message = Parameters<ReturnType<typeof createModels>['streamSimple']>[1]['messages'][number];
    const models = createModels();
    models.setProvider(faux.provider);
    const model = models.getModel('faux', 'm')!;
    const tools = [
      { name: 'lookup', description: 'Looks a key up.', parameters: { type: 'object', properties: { key: { type: 'string' } } } },
    ];
    ask = async () => {
      const messages: Message[] = [{ role: 'user', content: 'q', timestamp: Date.now() }];
      for (;;) {
        const stream = models.streamSimple(model, { systemPrompt: SYSTEM_PROMPT, messages, tools } as never);
        let text = '';
        for await (const event of stream) if (event.type === 'text_delta') text += event.delta;
        const message = await stream.result();
        messages.push(message);
        const calls = message.content.filter((part) => part.type === 'toolCall');
        if (calls.length === 0) return text;
        for (const call of calls) {
          const output = JSON.stringify({ key: call.arguments.key, value: 42 });
          messages.push({
            role: 'toolResult',
            toolCallId: call.id,
            toolName: call.name,
            content: [{ type: 'text', text: output }],
            isError: false,
            timestamp: Date.now(),
          });
        }
      }
    };
  }
  for (let i = 0; i < WARMUP; i++) await ask(`warm-${i}`);
  // Under `--expose-gc` (faux-instructions.ts), the garbage of the warm-up is collected before the
  // exchanges and theirs after them, so a count over the exchanges holds their collection whole.
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const cpu = process.cpuUsage();
  let next = 0;
  const worker = async () => {
    while (next < exchanges) {
      const n = next++;
      if ((await ask(`c-${n}`)) !== REPLY) throw new Error(`${which}: exchange ${n} did not answer the scripted reply`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  gc?.();
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / exchanges;
}

if (process.argv[2] === '--child') {
  const micros = await child(process.argv[3] as 'ours' | 'floor', Number(process.argv[4]));
  process.stdout.write(`@@cpu ${micros}\n`);
  process.exit(0);
}

const rounds = Number(process.argv[2] ?? 6);
const exchanges = Number(process.argv[3] ?? 500);
const script = fileURLToPath(import.meta.url);
const samples: Record<'ours' | 'floor', number[]> = { ours: [], floor: [] };
for (let round = 0; round < rounds; round++) {
  for (const which of round % 2 === 0 ? (['ours', 'floor'] as const) : (['floor', 'ours'] as const)) {
    const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', script, '--child', which, String(exchanges)], {
      encoding: 'utf8',
    });
    const line = run.stdout.split('\n').find((l) => l.startsWith('@@cpu '));
    if (run.status !== 0 || line === undefined) throw new Error(`${which} child failed:\n${run.stderr}`);
    samples[which].push(Number(line.slice(6)));
  }
}
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const ours = mean(samples.ours);
const floor = mean(samples.floor);
console.log(
  `CPU per exchange (${rounds} rounds of ${exchanges}): ours ${ours.toFixed(0)} µs, floor ${floor.toFixed(0)} µs, ours' own ${(ours - floor).toFixed(0)} µs`,
);
