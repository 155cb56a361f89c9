/**
 * The example's approval expiry (examples/cloudflare/src/shared/approval-expiry.ts): five minutes
 * unless the deployment's APPROVAL_EXPIRES_MS says otherwise; a value that is not a positive whole
 * number of milliseconds is refused with a message naming the var and the fix.
 */
import { expect, test } from 'vitest';
import { approvalExpiryMs, DEFAULT_APPROVAL_EXPIRY_MS } from '../../examples/cloudflare/src/shared/approval-expiry.ts';

test('five minutes by default, the var when it is set', () => {
  expect(DEFAULT_APPROVAL_EXPIRY_MS).toBe(300_000);
  expect(approvalExpiryMs({})).toBe(DEFAULT_APPROVAL_EXPIRY_MS);
  expect(approvalExpiryMs({ APPROVAL_EXPIRES_MS: ' ' })).toBe(DEFAULT_APPROVAL_EXPIRY_MS);
  expect(approvalExpiryMs(undefined)).toBe(DEFAULT_APPROVAL_EXPIRY_MS);
  expect(approvalExpiryMs({ APPROVAL_EXPIRES_MS: '8000' })).toBe(8000);
});

test.each(['0', '-5', '1.5', 'soon', '1e400'])('APPROVAL_EXPIRES_MS=%s is refused, naming the var and the fix', (value) => {
  expect(() => approvalExpiryMs({ APPROVAL_EXPIRES_MS: value })).toThrow(
    `APPROVAL_EXPIRES_MS must be a positive whole number of milliseconds; got "${value}". Unset it for the default of 300000 ms.`,
  );
});
