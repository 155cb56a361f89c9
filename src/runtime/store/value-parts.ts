/**
 * A stored JSON value whose large strings are kept apart from it. Spilling a whole value (the
 * `~spill:<chunks>:<key>` marker) stores a 20 MB message as 20 MB of JSON: escaped, stringified,
 * encoded and parsed again on every read, and a second time for every row that holds the same text.
 * Here each string over the spill threshold is taken out of the value and stored as the raw UTF-8
 * chunks of that string alone; the value's row keeps the rest (the skeleton, each taken string
 * replaced by `""`) and a list of parts naming where each string goes and which chunks hold it. A
 * part may name chunks another row of the same conversation already stored (a committed message
 * names its submission's), so the same text is written once.
 *
 * The column: `~spill:parts:<note>\n<parts JSON>\n<skeleton JSON>`, the parts being
 * `[[path, key, chunks, bytes], ...]`. It starts with the whole-value marker's prefix on purpose:
 * a version before this layout takes `parts` for a chunk count, finds none, and refuses the row
 * with a `ConversationRecordInvariantError` whose record id starts with the note, rather than
 * failing to parse it as JSON.
 */

export type PartPath = (string | number)[];

/** A string taken out of a value, and where it was. */
export interface TakenString {
  path: PartPath;
  text: string;
}

/** Where a taken string is stored: `chunks` rows of `flue_spill` under `key`, `bytes` of UTF-8 in all. */
export interface StoredPart {
  path: PartPath;
  key: string;
  chunks: number;
  bytes: number;
}

export const PARTS_MARKER = '~spill:parts:';
const PARTS_NOTE = '(a value stored with its large strings apart; versions of flue-workers before that layout cannot read it)';

/** A skeleton longer than this keeps the whole-value layout: the row, and an old version's error, stay small. */
export const MAX_SKELETON_CHARS = 64 * 1024;

/**
 * The value with every string `isLarge` accepts replaced by `""`, and those strings with their paths.
 * Containers along a taken string's path are copied; everything else is shared with `value`, which
 * is never modified. Objects with a `toJSON` are left whole (JSON decides what they become).
 */
export function takeLargeStrings(value: unknown, isLarge: (text: string) => boolean): { skeleton: unknown; taken: TakenString[] } {
  // Every batch is looked at, and almost none holds such a string: a plain search says so at less
  // than half the cost of the walk below, which keeps paths and copies.
  if (!holdsString(value, isLarge)) return { skeleton: value, taken: [] };
  const taken: TakenString[] = [];
  const path: PartPath = [];
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') {
      if (!isLarge(node)) return node;
      taken.push({ path: [...path], text: node });
      return '';
    }
    if (node === null || typeof node !== 'object') return node;
    if (Array.isArray(node)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        const next = walk(node[i]);
        path.pop();
        if (next !== node[i]) (copy ??= node.slice())[i] = next;
      }
      return copy ?? node;
    }
    if (typeof (node as { toJSON?: unknown }).toJSON === 'function') return node;
    const record = node as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    // Own keys, as JSON takes them, without an array of them per object (every batch is walked).
    for (const key in record) {
      if (!Object.hasOwn(record, key)) continue;
      path.push(key);
      const next = walk(record[key]);
      path.pop();
      if (next !== record[key]) (copy ??= { ...record })[key] = next;
    }
    return copy ?? node;
  };
  return { skeleton: walk(value), taken };
}

/** Whether `value` holds a string `isLarge` accepts where JSON would write it (not inside an object with a `toJSON`). */
function holdsString(value: unknown, isLarge: (text: string) => boolean): boolean {
  if (typeof value === 'string') return isLarge(value);
  if (value === null || typeof value !== 'object') return false;
  // Own enumerable string keys, as JSON takes them; the native call outruns a `for…in` in V8's baseline tiers.
  const items = Array.isArray(value) ? value : typeof (value as { toJSON?: unknown }).toJSON === 'function' ? [] : Object.values(value);
  for (let i = 0; i < items.length; i++) if (holdsString(items[i], isLarge)) return true;
  return false;
}

/**
 * Puts each string back at its path in a freshly parsed skeleton (modified in place). Answers the
 * first path that does not end at a `""` placeholder, or undefined when all of them did.
 */
export function restoreStrings(skeleton: unknown, strings: readonly TakenString[]): PartPath | undefined {
  for (const { path, text } of strings) {
    if (path.length === 0) return path;
    let node = skeleton;
    for (const step of path.slice(0, -1)) {
      if (node === null || typeof node !== 'object') return path;
      node = (node as Record<string | number, unknown>)[step];
    }
    const last = path[path.length - 1]!;
    if (node === null || typeof node !== 'object' || (node as Record<string | number, unknown>)[last] !== '') return path;
    (node as Record<string | number, unknown>)[last] = text;
  }
  return undefined;
}

/** A value taken whole (path `[]`) is the string itself: the skeleton is `""`. */
export function restoreValue(skeleton: unknown, strings: readonly TakenString[]): { value: unknown; misplaced?: PartPath } {
  if (strings.length === 1 && strings[0]!.path.length === 0) {
    return skeleton === '' ? { value: strings[0]!.text } : { value: skeleton, misplaced: [] };
  }
  const misplaced = restoreStrings(skeleton, strings);
  return misplaced === undefined ? { value: skeleton } : { value: skeleton, misplaced };
}

export function partsColumn(parts: readonly StoredPart[], skeletonText: string): string {
  const list = JSON.stringify(parts.map((part) => [part.path, part.key, part.chunks, part.bytes]));
  return `${PARTS_MARKER}${PARTS_NOTE}\n${list}\n${skeletonText}`;
}

/** The parts and skeleton of a parts column; undefined for any other column; throws a reason when it is malformed. */
export function parsePartsColumn(column: string): { parts: StoredPart[]; skeletonText: string } | undefined {
  if (!column.startsWith(PARTS_MARKER)) return undefined;
  const first = column.indexOf('\n');
  const second = first === -1 ? -1 : column.indexOf('\n', first + 1);
  if (second === -1) throw new Error('its parts column has no parts list');
  const list = JSON.parse(column.slice(first + 1, second)) as unknown;
  if (!Array.isArray(list)) throw new Error('its parts list is not a list');
  const parts = list.map((entry: unknown): StoredPart => {
    const [path, key, chunks, bytes] = Array.isArray(entry) ? entry : [];
    if (!Array.isArray(path) || typeof key !== 'string' || !Number.isInteger(chunks) || !Number.isInteger(bytes)) {
      throw new Error(`its parts list holds a malformed entry: ${JSON.stringify(entry)}`);
    }
    return { path: path as PartPath, key, chunks: chunks as number, bytes: bytes as number };
  });
  return { parts, skeletonText: column.slice(second + 1) };
}
