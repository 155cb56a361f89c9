import { describe, expect, it } from 'vitest';
import { sqlite } from '../../node/sqlite.ts';
import { SANDBOX_FILE_STORE, type SandboxFileStore } from '../sandbox/file-store.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { type VirtualSandboxOptions, virtualSandbox } from '../sandbox/virtual.ts';
import { VirtualFs } from '../sandbox/virtual-fs.ts';
import { SqlStore } from './sql-store.ts';
import { storedConversationKey } from './conversation-key.ts';

async function openStore(): Promise<SqlStore> {
  const adapter = sqlite();
  await adapter.migrate();
  return new SqlStore(await adapter.connect());
}

/** Counts contents reads, to show they are lazy and cached per sandbox. */
function counting(store: SandboxFileStore): { store: SandboxFileStore; reads: string[] } {
  const reads: string[] = [];
  const wrapped: SandboxFileStore = Object.create(store);
  wrapped.read = (path) => {
    reads.push(path);
    return store.read(path);
  };
  return { store: wrapped, reads };
}

function open(store: SandboxFileStore, options: VirtualSandboxOptions = {}): Promise<Sandbox> {
  return virtualSandbox(options).createSandbox({ id: 'a', [SANDBOX_FILE_STORE]: store } as { id: string });
}

describe('virtualSandbox over the conversation store', () => {
  it('files survive a new sandbox over the same store; seeds apply only at creation', async () => {
    const sql = await openStore();
    const seeded = { files: { 'README.md': 'seed\n' } };
    const one = await open(sql.sandboxFiles(storedConversationKey('s1')), seeded);
    expect(await one.readFile('README.md')).toBe('seed\n');
    await one.writeFile('README.md', 'edited\n');
    await one.writeFile('notes/a.txt', 'A');
    await one.mkdir('empty/dir', { recursive: true });
    const two = await open(sql.sandboxFiles(storedConversationKey('s1')), seeded);
    expect(await two.readFile('README.md')).toBe('edited\n');
    expect(await two.readFile('notes/a.txt')).toBe('A');
    expect((await two.stat('empty/dir')).isDirectory).toBe(true);
    expect(await two.readdir('.')).toEqual(['README.md', 'empty', 'notes']);
    // Another conversation (stream) has its own sandbox.
    const other = await open(sql.sandboxFiles(storedConversationKey('s2')), seeded);
    expect(await other.readFile('README.md')).toBe('seed\n');
    expect(await other.exists('notes')).toBe(false);
  });

  it('a deleted seed stays deleted', async () => {
    const sql = await openStore();
    const one = await open(sql.sandboxFiles(storedConversationKey('s')), { files: { 'seed.txt': 'x' } });
    await one.rm('seed.txt');
    const two = await open(sql.sandboxFiles(storedConversationKey('s')), { files: { 'seed.txt': 'x' } });
    expect(await two.exists('seed.txt')).toBe(false);
  });

  it('shell mutations persist: mv of a directory, cp -r, rm -r, appends, sed -i, touch', async () => {
    const sql = await openStore();
    const one = await open(sql.sandboxFiles(storedConversationKey('s')));
    const run = async (sb: Sandbox, command: string) => {
      const result = await sb.exec(command);
      expect(result.stderr).toBe('');
      return result.stdout;
    };
    await run(one, 'mkdir -p src/lib && echo one > src/lib/a.txt && echo two > src/b.txt');
    await run(
      one,
      'mv src app && cp -r app copy && rm -r copy/lib && echo more >> app/b.txt && sed -i s/one/ONE/ app/lib/a.txt && touch app/t',
    );
    const two = await open(sql.sandboxFiles(storedConversationKey('s')));
    expect(await run(two, 'find . -type f | sort')).toBe('./app/b.txt\n./app/lib/a.txt\n./app/t\n./copy/b.txt\n');
    expect(await two.readFile('app/b.txt')).toBe('two\nmore\n');
    expect(await two.readFile('app/lib/a.txt')).toBe('ONE\n');
    expect(await two.exists('src')).toBe(false);
  });

  it('contents load lazily on first read and are cached for the sandbox', async () => {
    const sql = await openStore();
    const one = await open(sql.sandboxFiles(storedConversationKey('s')));
    await one.writeFile('a.txt', 'A');
    await one.writeFile('b.txt', 'B');
    const { store, reads } = counting(sql.sandboxFiles(storedConversationKey('s')));
    const two = await open(store);
    expect((await two.stat('a.txt')).size).toBe(1);
    expect(reads).toEqual([]);
    await two.readFile('a.txt');
    await two.readFile('a.txt');
    expect(await two.exec('cat a.txt')).toMatchObject({ stdout: 'A' });
    expect(reads).toEqual(['/workspace/a.txt']);
  });

  it('large and binary files round-trip through chunks', async () => {
    const sql = await openStore();
    const big = new Uint8Array(2.5 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) % 256;
    const one = await open(sql.sandboxFiles(storedConversationKey('s')));
    await one.writeFile('big.bin', big);
    await one.writeFile('small.bin', new Uint8Array([0, 255, 1]));
    await one.writeFile('empty', '');
    const chunks = sql.driver.query(`SELECT count(*) AS n FROM flue_sandbox_chunks WHERE stream = 's'`)[0]!;
    expect(Number(chunks.n)).toBe(3);
    await one.exec('mv big.bin moved.bin');
    const two = await open(sql.sandboxFiles(storedConversationKey('s')));
    const back = await two.readFileBuffer('moved.bin');
    expect(back.length).toBe(big.length);
    expect(Buffer.compare(back, big)).toBe(0);
    expect([...(await two.readFileBuffer('small.bin'))]).toEqual([0, 255, 1]);
    expect(await two.readFile('empty')).toBe('');
    // Replacing a chunked file with a small one drops its chunks.
    await two.writeFile('moved.bin', 'tiny');
    expect(Number(sql.driver.query(`SELECT count(*) AS n FROM flue_sandbox_chunks`)[0]!.n)).toBe(0);
    expect(await (await open(sql.sandboxFiles(storedConversationKey('s')))).readFile('moved.bin')).toBe('tiny');
  });

  it('limits count what is already stored', async () => {
    const sql = await openStore();
    const limits = { limits: { maxTotalBytes: 10 } };
    const one = await open(sql.sandboxFiles(storedConversationKey('s')), limits);
    await one.writeFile('a', '123456');
    const two = await open(sql.sandboxFiles(storedConversationKey('s')), limits);
    await expect(two.writeFile('b', '12345')).rejects.toThrow('ENOSPC');
    await two.writeFile('a', '1234567890');
  });

  it('a failed write leaves both the store and the tree unchanged', async () => {
    const sql = await openStore();
    const one = await open(sql.sandboxFiles(storedConversationKey('s')), { limits: { maxFileBytes: 4 } });
    await expect(one.writeFile('a', '12345')).rejects.toThrow('EFBIG');
    expect(await one.exists('a')).toBe(false);
    expect(await (await open(sql.sandboxFiles(storedConversationKey('s')))).exists('a')).toBe(false);
  });

  it('rm -rf / empties the sandbox but keeps it created (seeds do not come back)', async () => {
    const sql = await openStore();
    const one = await open(sql.sandboxFiles(storedConversationKey('s')), { files: { a: 'A' } });
    await one.rm('/', { recursive: true, force: true });
    const two = await open(sql.sandboxFiles(storedConversationKey('s')), { files: { a: 'A' } });
    expect(await two.exists('a')).toBe(false);
    expect(await two.readdir('/')).toEqual(['workspace']);
  });

  it('renaming onto an ancestor is refused before anything changes', async () => {
    const sql = await openStore();
    const vfs = new VirtualFs({}, sql.sandboxFiles(storedConversationKey('s')));
    vfs.create(() => vfs.writeFile('/a', ''));
    vfs.mkdir('/d/e', true);
    expect(() => vfs.rename('/d/e', '/d')).toThrow('ENOTEMPTY');
    const again = new VirtualFs({}, sql.sandboxFiles(storedConversationKey('s')));
    expect(again.loadStored()).toBe(true);
    expect(again.stat('/d/e').isDirectory).toBe(true);
  });
});
