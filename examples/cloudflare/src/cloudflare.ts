/** Non-HTTP handlers: a daily cron tick becomes one signal to the assistant. */
import { dispatch } from '@flue/runtime';
import { OrderAssistant } from './agents/order-assistant.ts';

export default {
  async scheduled(controller: ScheduledController) {
    await dispatch(OrderAssistant, {
      id: 'daily-digest',
      message: {
        kind: 'signal',
        type: 'schedule',
        body: 'Summarize the status of order 7 for the morning report.',
        attributes: { cron: controller.cron, scheduledAt: new Date(controller.scheduledTime).toISOString() },
      },
      // A retried tick converges on the same submission instead of running twice.
      idempotencyKey: `cron:${controller.cron}:${controller.scheduledTime}`,
    });
  },
};
