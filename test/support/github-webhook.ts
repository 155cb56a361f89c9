/**
 * Test support: GitHub webhook requests signed the way GitHub signs them (an HMAC-SHA256 of the
 * raw body with the webhook secret, hex, in X-Hub-Signature-256). Web Crypto only, so the same
 * fixtures run on Node and in workerd.
 */
export const WEBHOOK_SECRET = 'It’s a Secret to Everybody';

export async function signBody(secret: string, body: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, bytes));
  return `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

export interface WebhookOptions {
  event?: string | null;
  delivery?: string | null;
  /** The signature header as sent; default: the body signed with WEBHOOK_SECRET. */
  signature?: string | null;
  secret?: string;
  contentType?: string;
  body?: string;
}

/** A POST as GitHub sends it; `null` leaves a header out. */
export async function webhookRequest(url: string, payload: unknown, options: WebhookOptions = {}): Promise<Request> {
  const body = options.body ?? JSON.stringify(payload);
  const signature = options.signature === undefined ? await signBody(options.secret ?? WEBHOOK_SECRET, body) : options.signature;
  const headers: Record<string, string> = {
    'content-type': options.contentType ?? 'application/json',
    'user-agent': 'GitHub-Hookshot/test',
  };
  if (options.event !== null) headers['x-github-event'] = options.event ?? 'issues';
  if (options.delivery !== null) headers['x-github-delivery'] = options.delivery ?? crypto.randomUUID();
  if (signature !== null) headers['x-hub-signature-256'] = signature;
  return new Request(url, { method: 'POST', headers, body });
}

/** An `issues` payload trimmed to the fields the tests' routes read. */
export function issuePayload(number: number, action = 'opened') {
  return {
    action,
    issue: { number, title: `Issue ${number}`, body: 'It crashes on start.' },
    repository: { full_name: 'octo-org/octo-repo', id: 1296269 },
    sender: { login: 'octocat' },
  };
}
