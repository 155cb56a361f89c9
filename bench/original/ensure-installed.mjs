// Installs the original runtime peer (bench/original/package-lock.json) when it is missing or is
// not the pinned version. `npm run bench:original` runs this first; it is a no-op once installed.
//
//   node bench/original/ensure-installed.mjs
//
// Install scripts of @google/genai and protobufjs (pulled in by pi-ai 0.83) are denied in
// package.json's allowScripts; the benchmark needs neither.
import { ensurePeer } from '../ensure-peer.mjs';

ensurePeer('original');
