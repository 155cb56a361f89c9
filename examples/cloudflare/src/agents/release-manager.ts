'use agent';
import { useApprovalGate, useModel } from '@flue/runtime';
import * as v from 'valibot';
import { approvalExpiryMs } from '../shared/approval-expiry.ts';
import { releases } from '../shared/releases.ts';

export function ReleaseManager() {
  useModel('anthropic/claude-sonnet-4-6');

  useApprovalGate({
    name: 'publish_release',
    description: 'Publish a tagged release to npm.',
    input: v.object({ pkg: v.string(), version: v.string() }),
    needsApproval: ({ version }) => !version.includes('-next'),
    // Undecided after this long, the request is denied on its own: nobody publishes a release
    // that an operator approved hours after the model asked, against a changed registry.
    expiresInMs: approvalExpiryMs(),
    async execute({ pkg, version }, approvalId) {
      const { url } = await releases.publish({ pkg, version, idempotencyKey: approvalId });
      return `Published ${pkg}@${version}: ${url}`;
    },
  });

  return 'Prepare releases. Stable releases need operator approval before they publish; an undecided request expires.';
}
