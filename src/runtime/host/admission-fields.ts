/**
 * The admission fields beside the message — `uid`, `idempotencyKey`, `initialData` — validated
 * once for every transport (`dispatch()`, handle dispatch, HTTP `POST /:id`), so the errors and
 * their wording are identical everywhere (delivery.md §2 checks 6–7).
 */
import * as v from 'valibot';
import { InvalidRequestError } from '../common/errors.ts';
import { MAX_TOKEN_LENGTH, assertJsonValue, textProblem } from '../common/input-limits.ts';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

const keyRule = `idempotencyKey must be a non-empty string of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;
const uidRule = 'uid must be a string (continue that incarnation) or null (create only)';

/** Keys and uids are stored and compared as SQLite TEXT, which cuts at a NUL. */
const wellFormed = (field: string, max: number) =>
  v.check<string, (issue: v.CheckIssue<string>) => string>(
    (text) => textProblem(text, max) === undefined,
    (issue) => `${field} ${textProblem(issue.input, max)}`,
  );

const fieldsSchema = v.object({
  idempotencyKey: v.optional(
    v.pipe(
      v.string(keyRule),
      v.nonEmpty(keyRule),
      v.maxLength(MAX_IDEMPOTENCY_KEY_LENGTH, keyRule),
      wellFormed('idempotencyKey', MAX_IDEMPOTENCY_KEY_LENGTH),
    ),
  ),
  uid: v.optional(v.nullable(v.pipe(v.string(uidRule), wellFormed('uid', MAX_TOKEN_LENGTH)))),
});

export interface AdmissionFields {
  uid?: string | null;
  idempotencyKey?: string;
  initialData?: unknown;
}

export function parseAdmissionFields(input: { uid?: unknown; idempotencyKey?: unknown; initialData?: unknown }): AdmissionFields {
  const parsed = v.safeParse(fieldsSchema, { uid: input.uid, idempotencyKey: input.idempotencyKey });
  if (!parsed.success) throw new InvalidRequestError('The admission request is malformed.', parsed.issues[0].message);
  const { uid, idempotencyKey } = parsed.output;
  if (typeof uid === 'string' && input.initialData !== undefined) {
    throw new InvalidRequestError(
      'initialData cannot be combined with a string uid.',
      'A string uid only continues an existing instance, so its initialData could never apply. Drop one of them.',
    );
  }
  // Before anything walks it recursively (structuredClone, the agent's schema, JSON.stringify).
  if (input.initialData !== undefined) assertJsonValue(input.initialData, 'initialData');
  return {
    ...(input.initialData === undefined ? {} : { initialData: input.initialData }),
    ...(uid === undefined ? {} : { uid }),
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
  };
}
