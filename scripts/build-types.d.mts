/** Types of scripts/build-types.mjs, for tests of the declarations it emits. */
export interface DeclarationTarget {
  /** Where the entries run, as the error messages say it: `Workers` or `Node`. */
  name: string;
  lib: string[];
  types: string[];
  /** package.json export names, e.g. `.` or `./cloudflare`. */
  entries: string[];
}
/** Emits every export's declarations into `dir` (default dist/types), then checks them. */
export function buildTypes(dir?: string): void;
/** Throws when the declarations in `dir` fail to type-check or load pi-ai's (or, off Node, Node's) types. */
export function checkDeclarations(dir?: string, targets?: DeclarationTarget[]): void;
/** Throws when a comment in the declarations in `dir` cites a document the package does not ship. */
export function checkCitations(dir?: string): void;
