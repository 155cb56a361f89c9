/**
 * Who is deciding an approval. DEMO ONLY: this accepts every request and takes the operator's
 * name from an `x-operator` header (default "Demo operator"). A real app must authenticate the
 * caller here (session cookie, access token, Cloudflare Access JWT, ...) and reject anyone who
 * is not allowed to approve, e.g. by throwing an HTTPException with status 401/403; otherwise
 * anyone who can reach the route can approve a release.
 */
export interface Operator {
  name: string;
}

export async function requireOperator(request: Request): Promise<Operator> {
  const name = request.headers.get('x-operator')?.trim().slice(0, 80);
  return { name: name || 'Demo operator' };
}
