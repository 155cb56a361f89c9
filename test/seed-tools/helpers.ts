/**
 * Small helpers shared by the Tools-seed tests: dispatch-and-read, and readers over the scripted
 * model server's recorded requests (what the model was shown).
 */
import { dispatch, init, type Agent, type AgentReply, type DeliveredMessageInput, type DispatchReceipt } from '@flue/runtime';
import type { RecordedMessage, RecordedRequest } from '@flue/runtime/testing';

/** `dispatch()` then `read()` the receipt through an `init()` handle on the same id. */
export async function dispatchAndRead(
  agent: Agent,
  id: string,
  message: DeliveredMessageInput,
): Promise<{ receipt: DispatchReceipt; reply: AgentReply }> {
  const receipt = await dispatch(agent, { id, message });
  const reply = await init(agent, { id }).read(receipt);
  return { receipt, reply };
}

/** `dispatch()` then `read()`, for a message whose submission is expected to fail: what `read()` rejected with. */
export async function dispatchAndFail(agent: Agent, id: string, message: DeliveredMessageInput): Promise<Error> {
  const outcome = await dispatchAndRead(agent, id, message).then(
    ({ reply }) => reply,
    (error: unknown) => error,
  );
  if (!(outcome instanceof Error)) throw new Error(`Expected the submission to fail; it replied ${JSON.stringify(outcome)}`);
  return outcome;
}

export function readReceipt(agent: Agent, id: string, receipt: DispatchReceipt): Promise<AgentReply> {
  return init(agent, { id }).read(receipt);
}

export function toolNames(request: RecordedRequest): string[] {
  return request.tools.map((tool) => tool.name);
}

/** The tool-result turn answering `toolCallId` in a recorded request. */
export function toolResult(request: RecordedRequest, toolCallId: string): RecordedMessage {
  const found = request.messages.find((message) => message.role === 'tool' && message.toolCallId === toolCallId);
  if (found === undefined) {
    throw new Error(`No tool result for ${toolCallId} in the request; messages were:\n${JSON.stringify(request.messages, null, 2)}`);
  }
  return found;
}

/** Every user-role text the model was shown (user messages and rendered signals), in order. */
export function userTexts(request: RecordedRequest): string[] {
  return request.messages.filter((message) => message.role === 'user').map((message) => message.content);
}

/** Rendered `<signal type="…">` blocks the model was shown, in order. */
export function signals(request: RecordedRequest, type?: string): string[] {
  const out: string[] = [];
  for (const text of userTexts(request)) {
    for (const match of text.matchAll(/<signal type="([^"]*)"[^>]*>[\s\S]*?<\/signal>/g)) {
      if (type === undefined || match[1] === type) out.push(match[0]);
    }
  }
  return out;
}

/** Lets queued runtime work (setImmediate wakes, loopback I/O) run; no fixed long sleeps. */
export async function settleIo(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}
