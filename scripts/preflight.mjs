// Every npm script runs under the pinned Node 22 from devDependencies (node_modules/.bin/node).
// An install with --ignore-scripts leaves that binary out and npm silently falls back to the
// system Node, where node:sqlite and wrangler are missing; say so instead of failing obscurely.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(
    `[flue] Node ${process.versions.node} is running, but this project needs Node >= 22.19.\n` +
      '       The pinned node@22.23.3 dev dependency provides it: run `npm install` (without --ignore-scripts)\n' +
      '       and start commands through `npm run …` or `npx …`.',
  );
  process.exit(1);
}

// Node imports @flue/runtime from the built dist/ (package.json "import" condition): rebuild it
// when a source is newer, so scripts never run yesterday's engine.
const { buildDist, isStale } = await import('./build-dist.mjs');
if (isStale()) await buildDist();
