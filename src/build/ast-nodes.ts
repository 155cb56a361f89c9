/**
 * Walking an acorn tree. acorn has no walker of its own (acorn-walk would be another dependency),
 * and the scans here only need every child of a node, in source order.
 */
import type { AnyNode } from 'acorn';

/** A node's child nodes in source order. */
export function childNodes(node: AnyNode): AnyNode[] {
  const children: AnyNode[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'loc' || key === 'range') continue;
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) children.push(item);
    } else if (isNode(value)) children.push(value);
  }
  return children;
}

function isNode(value: unknown): value is AnyNode {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}
