/**
 * The GitHub channel in real workerd, reached through the test Worker's own fetch handler
 * (test/workers/channel-app.ts), its secret a binding: signed webhooks reach the Echo Durable
 * Object as trusted signals, once per X-GitHub-Delivery; bad or missing signatures, missing
 * headers, unrouted events and oversized bodies admit nothing.
 */
import { exports } from 'cloudflare:workers';
import { afterEach, expect, test } from 'vitest';
import { getAgentInstance, init } from '@flue/runtime';
import { issuePayload, webhookRequest } from '../support/github-webhook.ts';
import { ECHO_LANE, Echo } from './agents.ts';
import { laneRequests, resetLane, scriptLane } from './lanes.ts';

const HOOK_URL = 'http://flue.test/channels/github';
const worker = () => (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default;

afterEach(async () => resetLane(ECHO_LANE));

interface Admitted {
  eventId: string;
  deliveries: { agent: string; id: string; submissionId: string; deduplicated?: true }[];
}

test('a signed webhook is admitted once, and the agent sees the signal with its attributes', async () => {
  await scriptLane(ECHO_LANE, { text: 'triaged' });
  const delivery = crypto.randomUUID();
  const first = await worker().fetch(await webhookRequest(HOOK_URL, issuePayload(101), { delivery }));
  expect(first.status).toBe(202);
  const body = (await first.json()) as Admitted;
  expect(body).toMatchObject({ eventId: `github:${delivery}`, deliveries: [{ agent: 'Echo', id: 'repo-octo-org/octo-repo-issue-101' }] });

  const replay = await worker().fetch(await webhookRequest(HOOK_URL, issuePayload(101), { delivery }));
  expect(replay.status).toBe(202);
  expect(((await replay.json()) as Admitted).deliveries).toMatchObject([
    { submissionId: body.deliveries[0]!.submissionId, deduplicated: true },
  ]);

  const reply = await init(Echo, { id: body.deliveries[0]!.id }).read(body.deliveries[0]!.submissionId);
  expect(reply.text).toBe('triaged');
  const requests = await laneRequests(ECHO_LANE);
  expect(requests).toHaveLength(1);
  const seen = JSON.stringify(requests[0]);
  for (const part of ['github.issues', 'opened', 'octo-org/octo-repo', 'octocat', 'Issue 101']) expect(seen).toContain(part);
});

test('bad or missing signatures answer 401, missing headers 400, oversized bodies 413; none admits', async () => {
  const refused: [Promise<Request>, number][] = [
    [webhookRequest(HOOK_URL, issuePayload(102), { secret: 'not the secret' }), 401],
    [webhookRequest(HOOK_URL, issuePayload(102), { signature: null }), 401],
    [webhookRequest(HOOK_URL, issuePayload(102), { delivery: null }), 400],
    [webhookRequest(HOOK_URL, issuePayload(102), { event: null }), 400],
    [webhookRequest(HOOK_URL, { ...issuePayload(102), padding: 'x'.repeat(70 * 1024) }), 413],
  ];
  for (const [request, status] of refused) {
    const response = await worker().fetch(await request);
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: { type: string } }).error.type).toEqual(expect.any(String));
  }
  expect(await getAgentInstance(Echo, 'repo-octo-org/octo-repo-issue-102')).toBeNull();
});

test('an event without a route is answered 200 ignored and admits nothing', async () => {
  const response = await worker().fetch(await webhookRequest(HOOK_URL, issuePayload(103), { event: 'star', delivery: 'd-star' }));
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ eventId: 'github:d-star', ignored: true, deliveries: [] });
  expect(await getAgentInstance(Echo, 'repo-octo-org/octo-repo-issue-103')).toBeNull();
});
