/**
 * A stand-in for the Workers AI binding, bound as `AI` (a service binding to this entrypoint of the
 * test Worker itself). `run(model, inputs)` answers with the shapes Workers AI documents: a byte
 * stream of `data: {…}` events ending with `data: [DONE]`, or a result object. Tests queue answers
 * per model with `script()` and read back the inputs each call got with `calls()`.
 */
import { WorkerEntrypoint } from 'cloudflare:workers';

export type FakeAIStep =
  /** Streamed: each event is one `data:` line. */
  | { events: unknown[] }
  /** Not streamed: `run()` resolves to this object. */
  | { result: unknown }
  /** `run()` rejects with this message, as the binding does for a failed inference. */
  | { error: string };

export interface FakeAICall {
  model: string;
  inputs: Record<string, unknown>;
  options?: Record<string, unknown>;
}

const scripts = new Map<string, FakeAIStep[]>();
const calls: FakeAICall[] = [];

export class FakeWorkersAI extends WorkerEntrypoint {
  async run(model: string, inputs: Record<string, unknown>, options?: Record<string, unknown>): Promise<unknown> {
    calls.push({ model, inputs: structuredClone(inputs), ...(options !== undefined ? { options } : {}) });
    const step = scripts.get(model)?.shift();
    if (step === undefined) throw new Error(`AiError: no scripted answer for ${model}`);
    if ('error' in step) throw new Error(step.error);
    if ('result' in step) return step.result;
    const encoder = new TextEncoder();
    const lines = [...step.events.map((event) => `data: ${JSON.stringify(event)}\n\n`), 'data: [DONE]\n\n'];
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        const line = lines.shift();
        if (line === undefined) controller.close();
        else controller.enqueue(encoder.encode(line));
      },
    });
  }

  async script(model: string, steps: FakeAIStep[]): Promise<void> {
    scripts.set(model, [...(scripts.get(model) ?? []), ...steps]);
  }

  async calls(model: string): Promise<FakeAICall[]> {
    return calls.filter((call) => call.model === model);
  }

  async reset(): Promise<void> {
    scripts.clear();
    calls.length = 0;
  }
}
