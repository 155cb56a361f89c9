/**
 * The scripted model behind `npm run dev` when no ANTHROPIC_API_KEY is set (and behind the page
 * test): a few rules that play both agents of the example app well enough to show every flow.
 * Runs in Node as the `fallback` of `startScriptedModelServer`; not part of the Worker bundle.
 *
 * - "publish <pkg>@<version>" (when publish_release is offered) → calls publish_release.
 * - a `tool-approval-result` signal (the release manager after an operator's decision, or after
 *   the request expired) → a short confirmation, or an acknowledgement of the denial / expiry /
 *   failure.
 * - "order <id>" (when lookup_order is offered) → calls lookup_order.
 * - a tool result → reports it.
 * - "help" / "what can you do" → lists the tools on offer.
 * - anything else → echoes.
 */
import { randomUUID } from 'node:crypto';
import type { RecordedRequest, ScriptedResponse } from '@flue/runtime/testing';

// The shipped gate's result signal carries attributes (approvalId, outcome, approver).
const RESULT_SIGNAL = /<signal type="tool-approval-result"[^>]*>\s*([\s\S]*?)\s*<\/signal>/g;

export function demoModel(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1);
  const content = last?.content ?? '';
  const offers = (tool: string) => request.tools.some((t) => t.name === tool);

  if (last?.role === 'tool') {
    const output = parseJson(content) as { status?: string; result?: string } | undefined;
    if (output?.status === 'executed' && typeof output.result === 'string') return { text: `Done. ${output.result}` };
    return { text: `Here is what I found: ${content}` };
  }

  // The decision signal and the gate's result arrive together; answer the latest result.
  const result = [...content.matchAll(RESULT_SIGNAL)].at(-1)?.[1];
  if (result !== undefined) {
    const approved = /^(.+?) approved (\S+) \(([^)]*)\)\. Result: ([\s\S]*)$/.exec(result);
    if (approved) return { text: `${approved[1]} approved it, so it is done. ${approved[4]}` };
    const denied = /^(.+?) denied (\S+) \(/.exec(result);
    if (denied) return { text: `Understood: ${denied[1]} denied the release, so I did not publish it. How would you like to proceed?` };
    if (/ expired without a decision /.test(result)) {
      return {
        text: 'Nobody decided on the release in time, so the request expired and I did not publish it. Ask again to request it anew.',
      };
    }
    return { text: `The approved release did not go through: ${result}` };
  }

  const release = /\bpublish\s+(@?[\w./-]+?)@(\d[\w.+-]*)/i.exec(content);
  if (release && offers('publish_release')) {
    const pkg = release[1]!;
    const version = release[2]!.replace(/[.,;:!?]+$/, ''); // "publish pkg@1.2.0." → 1.2.0
    return { text: `I'll publish ${pkg}@${version}.`, toolCalls: [{ id: callId(), name: 'publish_release', arguments: { pkg, version } }] };
  }

  const order = /order\s*#?\s*(\w+)/i.exec(content);
  if (order && offers('lookup_order')) {
    return { text: 'Let me look that up.', toolCalls: [{ name: 'lookup_order', arguments: { orderId: order[1]! } }] };
  }

  if (/\b(help|what can you do)\b/i.test(content)) {
    const tools = request.tools.map((t) => t.name).join(', ') || 'no tools';
    return { text: `(scripted model) I can use: ${tools}. Try "publish pkg@1.2.0" or "where is order 7?".` };
  }

  return { text: `(scripted model) You said: ${content}` };
}

/** The call id doubles as the approval id (and its idempotency key): unique across dev restarts. */
function callId(): string {
  return `call_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
