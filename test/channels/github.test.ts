/**
 * The GitHub channel on Node: signed webhooks become trusted signals, refused when the signature
 * or headers are wrong, admitted once per X-GitHub-Delivery, ignored when no route names the event.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { getAgentInstance, init, useAgentStart, useDelivery, useModel, type DeliveryOrigin } from '@flue/runtime';
import { githubChannel, type GitHubWebhookEvent } from '@flue/runtime/channels/github';
import { issuePayload, signBody, webhookRequest, WEBHOOK_SECRET } from '../support/github-webhook.ts';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const HOOK_URL = 'http://flue.test/channels/github';

const seen: { message: unknown; origin: DeliveryOrigin }[] = [];

function IssueTriage() {
  useModel('anthropic/claude-haiku-4-5');
  const delivery = useDelivery();
  useAgentStart(() => {
    seen.push({ message: { ...delivery }, origin: delivery.origin });
  });
  return 'Triage issues.';
}

const instanceOf = (event: GitHubWebhookEvent) => `repo-${event.payload.repository.full_name}-issue-${event.payload.issue.number}`;

function app(options: { maxBodyBytes?: number } = {}): Hono {
  const github = githubChannel({
    secret: WEBHOOK_SECRET,
    ...options,
    routes: {
      issues: (event) => ({
        agent: IssueTriage,
        id: instanceOf(event),
        message: {
          kind: 'signal',
          type: 'github.issues',
          body: JSON.stringify({ title: event.payload.issue.title, body: event.payload.issue.body }),
          attributes: { action: event.action ?? '', repository: event.payload.repository.full_name, sender: event.payload.sender.login },
        },
      }),
    },
  });
  return new Hono().route('/channels/github', github.route());
}

interface Admitted {
  eventId: string;
  ignored?: true;
  deliveries: { agent: string; id: string; submissionId: string; uid: string; acceptedAt: string; deduplicated?: true }[];
}

async function errorOf(response: Response) {
  return ((await response.json()) as { error: { type: string; message: string; details: string } }).error;
}

describe('githubChannel()', () => {
  it('admits a signed delivery as a trusted signal the agent sees with its attributes', async () => {
    seen.length = 0;
    await ctx.start([IssueTriage]);
    ctx.server.script({ text: 'triaged' });
    const response = await app().fetch(await webhookRequest(HOOK_URL, issuePayload(7), { delivery: 'd-7' }));
    expect(response.status).toBe(202);
    const body = (await response.json()) as Admitted;
    expect(body.eventId).toBe('github:d-7');
    expect(body.deliveries).toEqual([
      {
        agent: 'IssueTriage',
        id: 'repo-octo-org/octo-repo-issue-7',
        submissionId: expect.any(String),
        uid: expect.any(String),
        acceptedAt: expect.any(String),
      },
    ]);
    const reply = await init(IssueTriage, { id: 'repo-octo-org/octo-repo-issue-7' }).read(body.deliveries[0]!.submissionId);
    expect(reply.text).toBe('triaged');
    expect(seen).toEqual([
      {
        message: {
          kind: 'signal',
          type: 'github.issues',
          body: JSON.stringify({ title: 'Issue 7', body: 'It crashes on start.' }),
          attributes: { action: 'opened', repository: 'octo-org/octo-repo', sender: 'octocat' },
        },
        origin: 'app',
      },
    ]);
  });

  it('admits a redelivered webhook (same X-GitHub-Delivery) once, answering 2xx with the original receipt', async () => {
    await ctx.start([IssueTriage]);
    ctx.server.script({ text: 'once' });
    const router = app();
    const first = (await (await router.fetch(await webhookRequest(HOOK_URL, issuePayload(8), { delivery: 'd-8' }))).json()) as Admitted;
    const replay = await router.fetch(await webhookRequest(HOOK_URL, issuePayload(8), { delivery: 'd-8' }));
    expect(replay.status).toBe(202);
    const again = (await replay.json()) as Admitted;
    expect(again.deliveries).toEqual([{ ...first.deliveries[0], deduplicated: true }]);
    await init(IssueTriage, { id: first.deliveries[0]!.id }).read(first.deliveries[0]!.submissionId);
    // One model call: the replay started no second response.
    expect(ctx.server.requests).toHaveLength(1);
  });

  it('refuses a bad signature with 401 and admits nothing', async () => {
    await ctx.start([IssueTriage]);
    const wrongSecret = await webhookRequest(HOOK_URL, issuePayload(9), { secret: 'not the secret' });
    const response = await app().fetch(wrongSecret);
    expect(response.status).toBe(401);
    expect(await errorOf(response)).toMatchObject({
      type: 'channel_unauthenticated',
      message: expect.stringContaining('X-Hub-Signature-256'),
    });
    // A body changed after signing fails too.
    const signature = await signBody(WEBHOOK_SECRET, JSON.stringify(issuePayload(9)));
    const tampered = await webhookRequest(HOOK_URL, issuePayload(10), { signature });
    expect((await app().fetch(tampered)).status).toBe(401);
    for (const malformed of ['sha256=zz', 'sha1=abc', signature.slice(0, -2)]) {
      expect((await app().fetch(await webhookRequest(HOOK_URL, issuePayload(9), { signature: malformed }))).status).toBe(401);
    }
    expect(await getAgentInstance(IssueTriage, 'repo-octo-org/octo-repo-issue-9')).toBeNull();
    expect(await getAgentInstance(IssueTriage, 'repo-octo-org/octo-repo-issue-10')).toBeNull();
  });

  it('refuses missing headers: no signature → 401, no event or delivery id → 400', async () => {
    await ctx.start([IssueTriage]);
    const unsigned = await app().fetch(await webhookRequest(HOOK_URL, issuePayload(11), { signature: null }));
    expect(unsigned.status).toBe(401);
    expect((await errorOf(unsigned)).message).toContain('X-Hub-Signature-256');
    for (const [option, header] of [
      ['event', 'X-GitHub-Event'],
      ['delivery', 'X-GitHub-Delivery'],
    ] as const) {
      const response = await app().fetch(await webhookRequest(HOOK_URL, issuePayload(11), { [option]: null }));
      expect(response.status).toBe(400);
      expect(await errorOf(response)).toMatchObject({ type: 'invalid_request', message: expect.stringContaining(header) });
    }
    expect(await getAgentInstance(IssueTriage, 'repo-octo-org/octo-repo-issue-11')).toBeNull();
  });

  it("answers 200 ignored, admitting nothing, for an event no route names (GitHub's ping included)", async () => {
    await ctx.start([IssueTriage]);
    const response = await app().fetch(
      await webhookRequest(HOOK_URL, { zen: 'Keep it logically awesome.', hook_id: 1 }, { event: 'ping', delivery: 'd-ping' }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ eventId: 'github:d-ping', ignored: true, deliveries: [] });
    const star = await app().fetch(await webhookRequest(HOOK_URL, issuePayload(12), { event: 'star' }));
    expect(star.status).toBe(200);
    expect(await getAgentInstance(IssueTriage, 'repo-octo-org/octo-repo-issue-12')).toBeNull();
  });

  it('refuses a body over the limit with 413 before verifying it', async () => {
    await ctx.start([IssueTriage]);
    const payload = { ...issuePayload(13), padding: 'x'.repeat(4096) };
    const response = await app({ maxBodyBytes: 1024 }).fetch(await webhookRequest(HOOK_URL, payload));
    expect(response.status).toBe(413);
    expect(await errorOf(response)).toMatchObject({ type: 'payload_too_large' });
    expect(await getAgentInstance(IssueTriage, 'repo-octo-org/octo-repo-issue-13')).toBeNull();
  });

  it('takes a body exactly at the limit, its own or the 25 MiB default, and refuses one byte more', async () => {
    await ctx.start([IssueTriage]);
    // A verified event no route names answers 200 without admitting anything.
    const ofSize = (bytes: number) => {
      const base = JSON.stringify({ ...issuePayload(15), padding: '' });
      return JSON.stringify({ ...issuePayload(15), padding: 'p'.repeat(bytes - base.length) });
    };
    const send = (channel: Hono, bytes: number) =>
      webhookRequest(HOOK_URL, null, { body: ofSize(bytes), event: 'star' }).then((request) => channel.fetch(request));
    for (const [channel, limit] of [
      [app({ maxBodyBytes: 1024 }), 1024],
      [app(), 25 * 1024 * 1024],
    ] as const) {
      expect((await send(channel, limit)).status).toBe(200);
      const over = await send(channel, limit + 1);
      expect(over.status).toBe(413);
      expect(((await over.json()) as { error: { meta: unknown } }).error.meta).toEqual({ field: 'request body', limit, size: limit + 1 });
    }
  });

  it('accepts the form-encoded content type GitHub offers, and refuses others with 415', async () => {
    await ctx.start([IssueTriage]);
    ctx.server.script({ text: 'ok' });
    const form = new URLSearchParams({ payload: JSON.stringify(issuePayload(14)) }).toString();
    const response = await app().fetch(
      await webhookRequest(HOOK_URL, null, { body: form, contentType: 'application/x-www-form-urlencoded' }),
    );
    expect(response.status).toBe(202);
    const body = (await response.json()) as Admitted;
    await init(IssueTriage, { id: body.deliveries[0]!.id }).read(body.deliveries[0]!.submissionId);
    const text = await app().fetch(await webhookRequest(HOOK_URL, null, { body: 'hello', contentType: 'text/plain' }));
    expect(text.status).toBe(415);
  });

  it('checks its options when created', () => {
    expect(() => githubChannel({ secret: '', routes: {} })).toThrow(/secret/);
    expect(() => githubChannel({ secret: 's', routes: { issues: 'triage' as never } })).toThrow(/routes\.issues/);
    expect(() => githubChannel({ secret: 's', routes: {}, path: 'hooks' })).toThrow(/path/);
  });

  it('takes the secret from env when given a function (Cloudflare bindings, process.env on Node)', async () => {
    await ctx.start([IssueTriage]);
    const github = githubChannel({
      secret: (env) => (env as { GITHUB_WEBHOOK_SECRET: string }).GITHUB_WEBHOOK_SECRET,
      routes: {},
    });
    const router = new Hono().route('/channels/github', github.route());
    const env = { GITHUB_WEBHOOK_SECRET: 'from-env' };
    const good = await router.fetch(await webhookRequest(HOOK_URL, issuePayload(15), { secret: 'from-env', event: 'star' }), env);
    expect(good.status).toBe(200);
    const bad = await router.fetch(await webhookRequest(HOOK_URL, issuePayload(15), { event: 'star' }), env);
    expect(bad.status).toBe(401);
  });
});
