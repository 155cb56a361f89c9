/**
 * Validation issues: the `{ message, path }` list every validating error carries in
 * `meta.issues`, and how a message lists them.
 */
import type * as v from 'valibot';

export interface ValidationIssue {
  message: string;
  path?: readonly PropertyKey[];
}

export function formatIssues(issues: readonly ValidationIssue[]): string {
  return issues
    .map((issue) => (issue.path && issue.path.length > 0 ? `${issue.message} (at ${issue.path.map(String).join('.')})` : issue.message))
    .join('; ');
}

/** Valibot issues as `ValidationIssue`s, paths as the keys walked. */
export function toIssues(issues: readonly v.BaseIssue<unknown>[]): ValidationIssue[] {
  return issues.map((issue) => {
    const path = issue.path?.map((item) => item.key as PropertyKey);
    return path && path.length > 0 ? { message: issue.message, path } : { message: issue.message };
  });
}
