// Not shown in the seed (its release-manager.ts imports it): the tool the approval unlocks.
import { defineTool } from '@flue/runtime';
import * as v from 'valibot';
import { releases } from '../shared/releases.ts';

export const publishRelease = defineTool({
  name: 'publish_release',
  description: '将已批准的版本发布到 npm。',
  input: v.object({ pkg: v.string(), version: v.string() }),
  async run({ data, toolCallId }) {
    const { url } = await releases.publish({ pkg: data.pkg, version: data.version, idempotencyKey: toolCallId });
    return { output: { published: `${data.pkg}@${data.version}`, url } };
  },
});
