/** Messages that tell the user where to act name the host they are on. */
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderNotConfiguredError } from './errors.ts';
import { setHostKind } from './host-kind.ts';

afterEach(() => setHostKind(undefined));

describe('ProviderNotConfiguredError', () => {
  it("on a Worker names .dev.vars and the Worker's secrets, never start()", () => {
    setHostKind('cloudflare');
    const { message } = new ProviderNotConfiguredError('anthropic', ['ANTHROPIC_API_KEY']);
    expect(message).toBe(
      "Provider is not configured: anthropic. Set ANTHROPIC_API_KEY (in .dev.vars for flue dev, or the Worker's secrets: wrangler secret put <NAME>), " +
        'or set FLUE_SCRIPTED_MODEL_URL to use a scripted model.',
    );
  });

  it('before any host decided, names both', () => {
    expect(new ProviderNotConfiguredError('anthropic', ['ANTHROPIC_API_KEY']).message).toContain(
      "the Worker's secrets; on Node, the environment or start({ env })",
    );
  });
});
