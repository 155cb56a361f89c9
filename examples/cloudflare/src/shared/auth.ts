/**
 * Who is deciding an approval. The approval route is the only way a decision reaches the release
 * manager (the agent routers refuse signals from clients), so this check is what stands between
 * anyone who can load the page and a published release.
 *
 * The demo's credential is one shared operator token: the Worker secret `OPERATOR_TOKEN`, sent by
 * the page as `Authorization: Bearer <token>`. `npm run dev` sets a development value; deploy with
 * `wrangler secret put OPERATOR_TOKEN`. Without the secret every decision is refused. A real app
 * would use its identity provider instead (session cookie, Cloudflare Access JWT, ...) and take the
 * operator's name from it; here the authenticated operator labels their decision with the
 * `x-operator` header (default "Demo operator"), which is only trusted because the token was.
 */
import { HTTPException } from 'hono/http-exception';

export interface Operator {
  name: string;
}

export interface OperatorEnv {
  OPERATOR_TOKEN?: string;
}

export async function requireOperator(request: Request, env: OperatorEnv | undefined): Promise<Operator> {
  const expected = env?.OPERATOR_TOKEN;
  if (typeof expected !== 'string' || expected === '') {
    throw refuse(503, 'Approvals are disabled: the OPERATOR_TOKEN secret is not set on this Worker.');
  }
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')?.[1];
  if (presented === undefined || !(await sameSecret(presented, expected))) {
    throw refuse(401, 'Only an operator can decide approvals: send the operator token as "Authorization: Bearer <token>".');
  }
  const name = request.headers.get('x-operator')?.trim().slice(0, 80);
  return { name: name || 'Demo operator' };
}

function refuse(status: 401 | 503, error: string): HTTPException {
  const headers: Record<string, string> = status === 401 ? { 'www-authenticate': 'Bearer realm="approvals"' } : {};
  return new HTTPException(status, { res: Response.json({ error }, { status, headers }) });
}

/** Compares digests, so the time taken does not depend on how much of the token was right. */
async function sameSecret(presented: string, expected: string): Promise<boolean> {
  const digest = async (text: string) => new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  const [a, b] = await Promise.all([digest(presented), digest(expected)]);
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}
