/**
 * The test Worker's app.ts: the GitHub channel mounted as a project would mount it, its secret read
 * from the Worker's bindings per request. Echo triages; `ignored-*` repositories map to nothing.
 */
import { Hono } from 'hono';
import { githubChannel } from '@flue/runtime/channels/github';
import { Echo } from './agents.ts';

const github = githubChannel({
  secret: (env) => (env as { GITHUB_WEBHOOK_SECRET: string }).GITHUB_WEBHOOK_SECRET,
  maxBodyBytes: 64 * 1024,
  routes: {
    issues: ({ action, payload }) => ({
      agent: Echo,
      id: `repo-${payload.repository.full_name}-issue-${payload.issue.number}`,
      message: {
        kind: 'signal',
        type: 'github.issues',
        body: JSON.stringify({ title: payload.issue.title }),
        attributes: { action: action ?? '', repository: payload.repository.full_name, sender: payload.sender.login },
      },
    }),
  },
});

export const app = new Hono();
app.route('/channels/github', github.route());
app.all('*', () => new Response('flue-workers test worker'));
