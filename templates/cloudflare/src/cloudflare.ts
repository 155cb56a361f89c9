/**
 * Optional Worker extras. Named exports become Worker exports (your own Durable Objects,
 * Workflows, entrypoints); the default export holds non-HTTP handlers. HTTP stays in app.ts.
 */
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from 'cloudflare:workers';
import { dispatchScheduled, runAgentStep } from '@flue/runtime/workflows';
import { Hello } from './agents/hello.ts';

export interface GreetingParams {
  name: string;
}

/**
 * A Workflow (declared in wrangler.jsonc, started by `POST /greetings` in app.ts). Each step's
 * result is checkpointed: runAgentStep sends the message in one step (`greet:dispatch`, keyed by
 * `${event.instanceId}:greet`, so a retried step never sends twice) and waits for the reply in
 * another (`greet:read`, which re-attaches to the same reply when retried).
 */
export class GreetingWorkflow extends WorkflowEntrypoint<unknown, GreetingParams> {
  async run(event: WorkflowEvent<GreetingParams>, step: WorkflowStep) {
    // Derive the conversation id from the event, never from Date.now() or a random value:
    // run() is replayed, and every replay must address the same conversation.
    const id = `greeting-${event.instanceId}`;
    const { reply } = await runAgentStep(step, Hello, {
      name: 'greet',
      id,
      message: `Write a one-line greeting for ${event.payload.name}.`,
      event,
    });
    return { conversation: id, greeting: reply.text };
  }
}

export default {
  // Runs on the cron in wrangler.jsonc. dispatchScheduled() sends a `schedule` signal (with the
  // cron and the scheduled time as attributes) and returns once it is durably accepted; it is
  // keyed by the tick, so a redelivered trigger returns the same receipt instead of a second run.
  async scheduled(controller: ScheduledController) {
    await dispatchScheduled(Hello, controller, { id: 'daily', body: 'Good morning! Say hello and mention today’s date.' });
  },
};
