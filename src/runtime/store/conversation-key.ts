/**
 * Where a conversation's log lives in the store: the key of its rows in every table (the column is
 * named `stream`, as in stores already written). An instance's root conversation is
 * `agents/<agent>/<instance id>`; a `task` call's child conversation is
 * `tasks/<parent key>/<step id>/<tool call id>`, so it is found again from the call that opened it.
 *
 * Branded so that an instance id, a submission id or any other string cannot stand where a
 * conversation is meant: a key is made by the two functions below, or read back from the store.
 */
declare const conversationKeyBrand: unique symbol;
export type ConversationKey = string & { readonly [conversationKeyBrand]: true };

export function conversationKey(agentName: string, instanceId: string): ConversationKey {
  return `agents/${agentName}/${instanceId}` as ConversationKey;
}

/** Whether `key` is an instance's root conversation (`conversationKey`), not a task's child. */
export function isRootConversation(key: ConversationKey): boolean {
  return key.startsWith('agents/');
}

export function childConversationKey(parent: ConversationKey, stepId: string, toolCallId: string): ConversationKey {
  return `tasks/${parent}/${stepId}/${toolCallId}` as ConversationKey;
}

/** A key as the store holds it (a column value read back from SQL). */
export function storedConversationKey(value: unknown): ConversationKey {
  return String(value) as ConversationKey;
}
