/// <reference path="../../types/skill-md.d.ts" />
/**
 * The agent of the workerd sandbox tests: a durable `virtualSandbox()` with seeded fixtures, a
 * packaged skill (a SKILL.md import, packaged like `flue build` does) and a tool that can stall a
 * response so a test can crash the object mid-flight. Its model lane follows the instance id, so
 * each test file scripts its own lane.
 */
import { type ShellResult, useModel, useSandbox, useSkill, useTool, virtualSandbox } from '@flue/runtime';
import labNotes from './skills/lab-notes/SKILL.md';

export const LAB_PROVIDER = 'lab';
export const LAB_PERSIST_LANE = 'sandbox-persist';
export const LAB_TOOLS_LANE = 'sandbox-tools';

export { labNotes };

export const numbered = (n: number): string => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n');
export const WIDE_LINE = 'x'.repeat(99);
export const MANY_HITS = Array.from({ length: 150 }, (_, i) => `hit ${i} ${'w'.repeat(600)}`).join('\n');

const labFiles = {
  'README.md': '# Lab\n',
  'notes.txt': 'alpha\nbeta\ngamma\n',
  'dup.txt': 'x x x',
  'data/lines.txt': numbered(2500),
  'data/wide.txt': Array(1000).fill(WIDE_LINE).join('\n'),
  'data/long-line.txt': `${'y'.repeat(60_000)}\nsecond`,
  'data/many.txt': MANY_HITS,
  'src/a.ts': 'const foo = 1;\nfoo(bar);\n',
  'src/b.md': 'foo in docs\n',
  'c.txt': "it's foo\n",
};

const hang = (): Promise<ShellResult> => new Promise<ShellResult>(() => {});

const lab = virtualSandbox({ files: labFiles, commands: { hang } });

/** 1100 files, for the glob cap (only the instance that needs them seeds them). */
const crowd = virtualSandbox({
  files: Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [`f${String(i).padStart(4, '0')}.txt`, ''])),
});

/** The stall tool blocks (once per isolate) until the test resets the object. */
export const stall = { armed: false, entered: false };

export function SandboxLab({ id }: { id: string }) {
  useModel(`${LAB_PROVIDER}/${id.startsWith('tools') ? LAB_TOOLS_LANE : LAB_PERSIST_LANE}`);
  useSandbox(id === 'tools-glob-cap' ? crowd : lab);
  useSkill(labNotes);
  useTool({
    name: 'stall',
    description: 'Wait for something.',
    async run() {
      if (stall.armed) {
        stall.armed = false;
        stall.entered = true;
        await new Promise(() => {});
      }
      return 'waited';
    },
  });
  return 'Work in the lab.';
}
