/**
 * The template's replay test (templates/cloudflare/test/hello.replay.test.ts), run here against
 * this checkout's runtime: a change to the runtime that makes the template's committed recording
 * diverge fails in the unit suite, not only in the `flue init` end-to-end test.
 */
import '../templates/cloudflare/test/hello.replay.test.ts';
