/**
 * Test double for the npm publisher behind the approval gate: records every publish (with its
 * idempotency key) and can be told to fail the next call.
 */
export interface PublishRequest {
  pkg: string;
  version: string;
  idempotencyKey: string;
}

const calls: PublishRequest[] = [];
let failNext: Error | undefined;

export const releases = {
  calls,
  failNextWith(error: Error): void {
    failNext = error;
  },
  reset(): void {
    calls.length = 0;
    failNext = undefined;
  },
  async publish(request: PublishRequest): Promise<{ url: string }> {
    calls.push({ ...request });
    if (failNext !== undefined) {
      const error = failNext;
      failNext = undefined;
      throw error;
    }
    return { url: `https://www.npmjs.com/package/${request.pkg}/v/${request.version}` };
  },
};
