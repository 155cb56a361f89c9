/**
 * Optional Worker extras. Named exports become Worker exports (your own Durable Objects,
 * Workflows, entrypoints); the default export holds non-HTTP handlers. HTTP stays in app.ts.
 */
import { dispatch } from '@flue/runtime';
import { Hello } from './agents/hello.ts';

export default {
  // Runs on the cron in wrangler.jsonc. dispatch() returns once the message is durably accepted;
  // the idempotency key makes a redelivered trigger return the same receipt instead of a second run.
  async scheduled(controller: ScheduledController) {
    await dispatch(Hello, {
      id: 'daily',
      message: {
        kind: 'signal',
        type: 'schedule',
        body: 'Good morning! Say hello and mention today’s date.',
        attributes: { cron: controller.cron, scheduledAt: new Date(controller.scheduledTime).toISOString() },
      },
      idempotencyKey: `cron:${controller.cron}:${controller.scheduledTime}`,
    });
  },
};
