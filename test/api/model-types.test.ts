/**
 * The runtime's own declarations of pi-ai's model shapes (src/runtime/model/model-types.ts) against
 * pi-ai's, checked by `npx tsc --noEmit` (vitest only needs the file to load). The data shapes go
 * both ways, so they cannot drift apart when pi-ai changes; a pi-ai provider and chat model are a
 * `Provider` and a `Model`.
 */
import type * as Pi from '@earendil-works/pi-ai';
import { expect, test } from 'vitest';
import type * as Ours from '../../src/runtime/model/model-types.ts';

/** `true` when A and B are assignable to each other; otherwise a type that `true` does not fit. */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : 'pi-ai → ours only') : [B] extends [A] ? 'ours → pi-ai only' : 'neither';
type Into<A, B> = [A] extends [B] ? true : 'not assignable';

export const shapes: {
  json: Mutual<Ours.JsonValue, Pi.JsonValue>;
  api: Mutual<Ours.Api, Pi.Api>;
  thinkingLevel: Mutual<Ours.ModelThinkingLevel, Pi.ModelThinkingLevel>;
  text: Mutual<Ours.TextContent, Pi.TextContent>;
  thinking: Mutual<Ours.ThinkingContent, Pi.ThinkingContent>;
  image: Mutual<Ours.ImageContent, Pi.ImageContent>;
  toolCall: Mutual<Ours.ToolCall, Pi.ToolCall>;
  usage: Mutual<Ours.Usage, Pi.Usage>;
  stopReason: Mutual<Ours.StopReason, Pi.StopReason>;
  tool: Mutual<Ours.Tool, Pi.Tool>;
  system: Mutual<Ours.SystemMessage, Pi.SystemMessage>;
  user: Mutual<Ours.UserMessage, Pi.UserMessage>;
  assistant: Mutual<Ours.AssistantMessage, Pi.AssistantMessage>;
  toolResult: Mutual<Ours.ToolResultMessage, Pi.ToolResultMessage>;
  message: Mutual<Ours.Message, Pi.Message>;
  messages: Mutual<Ours.Message[], Pi.Message[]>;
  model: Into<Pi.Model<Pi.Api>, Ours.Model>;
  provider: Into<Pi.Provider, Ours.Provider>;
  providerOfApis: Into<Pi.Provider<'anthropic-messages' | 'openai-completions'>, Ours.Provider>;
} = {
  json: true,
  api: true,
  thinkingLevel: true,
  text: true,
  thinking: true,
  image: true,
  toolCall: true,
  usage: true,
  stopReason: true,
  tool: true,
  system: true,
  user: true,
  assistant: true,
  toolResult: true,
  message: true,
  messages: true,
  model: true,
  provider: true,
  providerOfApis: true,
};

test('the model shapes type-check against pi-ai (see tsc)', () => {
  expect(Object.values(shapes).every((value) => value === true)).toBe(true);
});
