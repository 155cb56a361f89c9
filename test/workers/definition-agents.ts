/** Agents whose definitions break the contract, for the workerd definition-error tests. */
import { useModel } from '@flue/runtime';

/** Async: admission rejects every send to it. */
export async function Hasty() {
  useModel('scripted/echo');
  return 'Never rendered.';
}

/** A misspelt durability key: admission rejects every send to it. */
export function Unruly() {
  useModel('scripted/echo');
}
Unruly.durability = { maxAttempt: 2 } as never;

/** An unknown model id: admitted, and the submission settles with the typed error. */
export function Typo() {
  useModel('scripted/no-such-lane');
}
