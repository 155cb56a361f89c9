/** The agent of the large-value workerd tests: big tool outputs and big persistent state. */
import * as v from 'valibot';
import { useModel, usePersistentState, useTool } from '@flue/runtime';

export const HOARD_LANE = 'hoard';
export const HOARD_PROVIDER = 'hoard';

/** JSON data of about `bytes` UTF-8 bytes, with quotes, escapes and multi-byte characters. */
export function bigOutput(bytes: number): { rows: string[] } {
  const row = 'Zoë said "hi" \\ — naïve café 😀 €\n'.repeat(32);
  const perRow = new TextEncoder().encode(JSON.stringify(row)).byteLength + 1;
  return { rows: Array.from({ length: Math.ceil(bytes / perRow) }, (_, i) => `${row}${i}`) };
}

/** Plain text of about `bytes` UTF-8 bytes, with quotes, newlines and multi-byte characters. */
export function bigText(bytes: number): string {
  const line = 'Zoë said "hi" — naïve café 😀 €\n';
  return line.repeat(Math.ceil(bytes / new TextEncoder().encode(line).byteLength));
}

/** The system prompt reports the state's size, so a test sees what a later render read back. */
export function Hoarder() {
  useModel(`${HOARD_PROVIDER}/${HOARD_LANE}`);
  const [blob, setBlob] = usePersistentState<unknown>('blob', null);
  useTool({
    name: 'dump',
    description: 'Dump data.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => ({ output: bigOutput(data.bytes) }),
  });
  useTool({
    name: 'recite',
    description: 'Recite text.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => bigText(data.bytes),
  });
  useTool({
    name: 'save',
    description: 'Save data.',
    input: v.object({ bytes: v.number() }),
    run: ({ data }) => {
      setBlob(bigOutput(data.bytes));
      return 'saved';
    },
  });
  return `Hoard. Stored state: ${blob === null ? 'none' : `${JSON.stringify(blob).length} characters`}.`;
}
