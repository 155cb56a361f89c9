/** One exchange over the bench project's `POST /turn/:id`, as the `wrangler dev` benches send it. */
import type { DevServer } from '../../test/support/wrangler-dev.ts';
import { expectedReply, question, replyParts } from './side-by-side-script.ts';

/**
 * How a message is sent: `turn`, one request answered with the reply; `receipt` (the bare Worker
 * only), the same request made of two calls to its object in the shape of Flue's API,
 * `read(await dispatch(text))`: the message admitted for a receipt, then its reply read by it.
 */
export type Route = 'turn' | 'receipt';

/**
 * One exchange; its reply is the scripted reply for `key`, or in a burst holds one of `accept`
 * (joined sends share a reply: a burst reply answering several holds their replies in a row, and
 * its parts are answered). `side` names the sender in the error.
 */
export async function turn(
  dev: DevServer,
  conversation: string,
  key: string,
  accept?: Set<string>,
  route: Route = 'turn',
  side?: string,
): Promise<string[]> {
  const response = await fetch(`${dev.base}/${route}/${conversation}`, { method: 'POST', body: question(key) });
  // Read as text first: a failing Worker or wrangler's proxy answers an HTML page, which the error must show.
  const text = await response.text();
  const reply = replyOf(text);
  const parts = accept ? replyParts(reply ?? '') : [];
  const answered = accept ? parts.some((part) => accept.has(part)) : reply === expectedReply(key);
  if (response.status !== 200 || !answered) {
    const shown = readable(text);
    throw new Error(
      `${side === undefined ? '' : `${side}: `}turn ${conversation}/${key} answered ${response.status} (${text.length} chars) ${shown.slice(0, 400)} … ${shown.slice(-200)}`,
    );
  }
  return parts;
}

/** An answer as an error shows it: an HTML error page (wrangler's, for an exception) as its text alone. */
function readable(text: string): string {
  if (!text.trimStart().startsWith('<')) return text;
  return text
    .replace(/<(style|script)[^>]*>[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The `reply` of a turn's JSON answer; undefined when the answer is not that JSON. */
function replyOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { reply?: unknown };
    return typeof body.reply === 'string' ? body.reply : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Full-size bursts each side runs before one is measured. V8 was still compiling the burst's
 * functions in its third and fourth bursts (`--trace-opt` through workerd's V8 flags, compiles
 * logged per burst: ours 159, 128, 214, 64, 19, 20; bare 69, 33, 39, 13, 0, 0), so after fewer
 * the figure held JIT that an isolate serving bursts pays once.
 */
export const WARMUP_BURSTS = 4;

/**
 * Runs now the backstop alarm each of these conversations of ours left to lapse when its queue
 * emptied (the bench project's `POST /lapse`, wrangler-cpu-project.ts), so it lands outside the
 * figure of whatever runs next.
 */
export async function lapse(dev: DevServer, ids: string[]): Promise<void> {
  const response = await fetch(`${dev.base}/lapse`, { method: 'POST', body: JSON.stringify(ids) });
  if (response.status !== 204) throw new Error(`/lapse answered ${response.status}`);
}
