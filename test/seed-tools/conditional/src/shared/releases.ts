/** Test double for the npm publisher: records every publish and returns a deterministic URL. */
export interface PublishRequest {
  pkg: string;
  version: string;
  idempotencyKey: string;
}

const calls: PublishRequest[] = [];

export const releases = {
  calls,
  reset(): void {
    calls.length = 0;
  },
  async publish(request: PublishRequest): Promise<{ url: string }> {
    calls.push({ ...request });
    return { url: `https://www.npmjs.com/package/${request.pkg}/v/${request.version}` };
  },
};
