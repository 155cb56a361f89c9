/**
 * The example's package publisher: a stand-in for a real registry client. It publishes nothing;
 * it answers with the URL the release would have. A real client would pass `idempotencyKey` on
 * (the gate's approvalId) so a retried approval cannot publish twice.
 */
export interface PublishRequest {
  pkg: string;
  version: string;
  idempotencyKey: string;
}

export const releases = {
  async publish({ pkg, version }: PublishRequest): Promise<{ url: string }> {
    return { url: `https://www.npmjs.com/package/${pkg}/v/${encodeURIComponent(version)}` };
  },
};
