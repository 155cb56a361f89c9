// Installs the Agents SDK peer (bench/agents-sdk/package-lock.json) when it is missing or is not
// the pinned versions. bench/node/wrangler-cpu.ts and bundle-size.ts run this first; it is a no-op
// once installed.
//
//   node bench/agents-sdk/ensure-installed.mjs
import { ensurePeer } from '../ensure-peer.mjs';

ensurePeer('agents-sdk');
