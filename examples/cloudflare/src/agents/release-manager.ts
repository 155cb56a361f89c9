'use agent';
import { useModel } from '@flue/runtime';
import * as v from 'valibot';
import { releases } from '../shared/releases.ts';
import { useApprovalGate } from '../shared/use-approval-gate.ts';

export function ReleaseManager() {
  useModel('anthropic/claude-sonnet-4-6');

  useApprovalGate({
    name: 'publish_release',
    description: 'Publish a tagged release to npm.',
    input: v.object({ pkg: v.string(), version: v.string() }),
    needsApproval: ({ version }) => !version.includes('-next'),
    async execute({ pkg, version }, approvalId) {
      const { url } = await releases.publish({ pkg, version, idempotencyKey: approvalId });
      return `Published ${pkg}@${version}: ${url}`;
    },
  });

  return 'Prepare releases. Stable releases need operator approval before they publish.';
}
