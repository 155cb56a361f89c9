/**
 * The example app's approval route credential (examples/cloudflare/src/shared/auth.ts): fail
 * closed without a configured token, 401 without the right bearer token. The page test covers the
 * route end to end in wrangler dev; these cover the branches it does not reach.
 */
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';
import { requireOperator } from '../../examples/cloudflare/src/shared/auth.ts';

function request(headers: Record<string, string> = {}): Request {
  return new Request('http://app.test/api/approvals/c1', { method: 'POST', headers });
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; body: { error: string }; headers: Headers }> {
  const error = await promise.then(
    () => expect.unreachable('expected a refusal'),
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(HTTPException);
  const response = (error as HTTPException).getResponse();
  return { status: response.status, body: (await response.json()) as { error: string }, headers: response.headers };
}

describe('requireOperator()', () => {
  const env = { OPERATOR_TOKEN: 'sekrit-token' };

  it('refuses every decision (503) while OPERATOR_TOKEN is unset or empty, even one carrying a token', async () => {
    for (const configured of [undefined, {}, { OPERATOR_TOKEN: '' }]) {
      const { status, body } = await refusal(requireOperator(request({ authorization: 'Bearer anything' }), configured));
      expect(status).toBe(503);
      expect(body.error).toContain('OPERATOR_TOKEN');
    }
  });

  it('answers 401 with a Bearer challenge for a missing, malformed or wrong token', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'sekrit-token' },
      { authorization: 'Basic c2Vrcml0LXRva2Vu' },
      { authorization: 'Bearer sekrit' },
      { authorization: 'Bearer sekrit-token-and-more' },
    ];
    for (const headers of attempts) {
      const { status, body, headers: answered } = await refusal(requireOperator(request(headers), env));
      expect(status).toBe(401);
      expect(answered.get('www-authenticate')).toBe('Bearer realm="approvals"');
      expect(body.error).toMatch(/^Only an operator can decide approvals/);
    }
  });

  it('accepts the token and takes the display name from x-operator, defaulting to "Demo operator"', async () => {
    await expect(requireOperator(request({ authorization: 'Bearer sekrit-token' }), env)).resolves.toEqual({ name: 'Demo operator' });
    await expect(requireOperator(request({ authorization: 'bearer sekrit-token', 'x-operator': ' Riley ' }), env)).resolves.toEqual({
      name: 'Riley',
    });
  });
});
