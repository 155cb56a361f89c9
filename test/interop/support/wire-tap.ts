/**
 * Interop test support: a `fetch` wrapper handed to the official SDK (`createFlueClient({ fetch })`)
 * that records every exchange the SDK makes — and, for the conversation views, the bodies it read
 * (JSON arrays, SSE events as they arrive) from a clone — so a test can check the wire against
 * streaming-protocol.md while the unmodified client drives it.
 */

export interface SseEvent {
  event: string;
  data: string;
  /** ms since the connection's response arrived. */
  at: number;
}

export interface Exchange {
  method: string;
  url: URL;
  status: number;
  headers: Record<string, string>;
  startedAt: number;
  /** When the response headers arrived. */
  answeredAt: number;
  /** Parsed JSON body (history, admission, plain/long-poll updates, errors). */
  json?: unknown;
  /** SSE connections: events in arrival order (comments counted separately). */
  events?: SseEvent[];
  heartbeats?: number;
  /** Resolves once the body clone was fully read (or failed). */
  done: Promise<void>;
}

export interface WireTap {
  readonly fetch: typeof fetch;
  readonly exchanges: Exchange[];
  /** Holds every request made from now on until `release()` (a network outage, as the client sees it). */
  hold(): void;
  release(): void;
  /** Waits for every body clone read so far (SSE clones end when their connection does). */
  settled(): Promise<void>;
}

export function wireTap(base: typeof fetch = globalThis.fetch.bind(globalThis)): WireTap {
  const exchanges: Exchange[] = [];
  let gate: { held: Promise<void>; release: () => void } | undefined;
  const tapped = (async (input: RequestInfo | URL, init?: RequestInit) => {
    if (gate !== undefined) await gate.held;
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    const startedAt = Date.now();
    const response = await base(input, init);
    const exchange: Exchange = {
      method,
      url,
      status: response.status,
      headers: Object.fromEntries(response.headers),
      startedAt,
      answeredAt: Date.now(),
      done: Promise.resolve(),
    };
    exchanges.push(exchange);
    if (response.body !== null) {
      const copy = response.clone();
      const type = response.headers.get('content-type') ?? '';
      exchange.done = type.includes('text/event-stream')
        ? readSse(copy, exchange)
        : copy.text().then(
            (text) => {
              try {
                exchange.json = text === '' ? undefined : JSON.parse(text);
              } catch {
                exchange.json = text;
              }
            },
            () => {},
          );
    }
    return response;
  }) as typeof fetch;
  return {
    fetch: tapped,
    exchanges,
    hold() {
      if (gate !== undefined) return;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      gate = { held, release };
    },
    release() {
      gate?.release();
      gate = undefined;
    },
    async settled() {
      await Promise.all(exchanges.map((exchange) => exchange.done));
    },
  };
}

async function readSse(response: Response, exchange: Exchange): Promise<void> {
  const events: SseEvent[] = [];
  exchange.events = events;
  exchange.heartbeats = 0;
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event: { event?: string; data: string[] } = { data: [] };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          if (event.event !== undefined)
            events.push({ event: event.event, data: event.data.join('\n'), at: Date.now() - exchange.answeredAt });
          event = { data: [] };
        } else if (line.startsWith(':')) exchange.heartbeats!++;
        else if (line.startsWith('event:')) event.event = line.slice(6).replace(/^ /, '');
        else if (line.startsWith('data:')) event.data.push(line.slice(5).replace(/^ /, ''));
      }
    }
  } catch {
    // The connection was aborted or dropped: the events read so far stand.
  }
}

// ── conformance ─────────────────────────────────────────────────────────────────────────────

const CHUNK_TYPES = new Set([
  'conversation-reset',
  'message-appended',
  'message-started',
  'message-delta',
  'message-metadata',
  'data-part',
  'tool-input',
  'tool-output',
  'tool-output-error',
  'message-completed',
  'submission-settled',
  'stream-checkpoint',
]);

const OFFSET = /^\d+_\d+$/;

export function offsetSeq(offset: string): number {
  if (offset === '-1') return -1;
  const match = /^\d+_(\d+)$/.exec(offset);
  if (match === null) throw new Error(`not an offset: ${offset}`);
  return Number(match[1]);
}

type Position = { batch: number; index: number };
type Item = { type?: unknown; conversationId?: unknown; position?: Position; incarnation?: unknown };

function later(a: Position, b: Position): boolean {
  return a.batch !== b.batch ? a.batch > b.batch : a.index > b.index;
}

/**
 * Checks every recorded exchange against streaming-protocol.md §2–§7 and §11; returns the
 * violations (empty = conformant), each naming the request.
 */
export function protocolViolations(exchanges: readonly Exchange[]): string[] {
  const problems: string[] = [];
  for (const exchange of exchanges) {
    const where = `${exchange.method} ${exchange.url.pathname}${exchange.url.search} → ${exchange.status}`;
    const fail = (message: string) => problems.push(`${where}: ${message}`);
    const h = exchange.headers;
    const view = exchange.url.searchParams.get('view');
    const isConversation = exchange.url.pathname.split('/').length >= 4 && !/\/(abort|attachments\/.*)$/.test(exchange.url.pathname);
    if (exchange.status >= 400 || exchange.status < 200) {
      if (exchange.status >= 500) fail('5xx answer (the DS client would retry it forever)');
      continue;
    }
    for (const name of ['x-content-type-options', 'cross-origin-resource-policy']) {
      if (h[name] === undefined) fail(`missing ${name}`);
    }
    if ('stream-up-to-date' in h && h['stream-up-to-date'] !== 'true')
      fail(`Stream-Up-To-Date present but not "true": ${h['stream-up-to-date']}`);
    if ('stream-closed' in h) fail('Stream-Closed must never be sent');
    if ('stream-cursor' in h) fail('Stream-Cursor must never be sent');

    if (exchange.method === 'POST' && exchange.status === 202) {
      const body = exchange.json as { streamUrl?: string; offset?: string };
      if (h.location !== body.streamUrl) fail(`Location ${h.location} != streamUrl ${body.streamUrl}`);
      if (h['stream-next-offset'] !== body.offset) fail(`Stream-Next-Offset ${h['stream-next-offset']} != offset ${body.offset}`);
      continue;
    }
    if (exchange.method !== 'GET' || !isConversation) continue;

    if (view === null || view === 'history') {
      const body = exchange.json as { offset?: string; incarnation?: unknown; v?: unknown };
      if (body?.v !== 1) fail('history without v: 1');
      if (h['stream-next-offset'] !== body?.offset)
        fail(`history Stream-Next-Offset ${h['stream-next-offset']} != body offset ${body?.offset}`);
      if (h['stream-up-to-date'] !== 'true') fail('history without Stream-Up-To-Date: true');
      if (typeof body?.incarnation !== 'string') fail('history without incarnation');
      if (h['cache-control'] !== 'no-store') fail(`history Cache-Control ${h['cache-control']}`);
      continue;
    }
    if (view !== 'updates') continue;
    const requestSeq = offsetSeq(exchange.url.searchParams.get('offset') ?? '-1');
    if (exchange.url.searchParams.has('cursor')) fail('the client sent a cursor (so the server sent Stream-Cursor somewhere)');

    const checkItems = (items: Item[], upTo: number | undefined, last: Position | undefined, context: string): Position | undefined => {
      for (const item of items) {
        if (item === null || typeof item !== 'object' || typeof item.type !== 'string' || !CHUNK_TYPES.has(item.type)) {
          fail(`${context}: unknown chunk ${JSON.stringify(item)}`);
          continue;
        }
        if (item.type === 'stream-checkpoint') {
          fail(`${context}: a stream-checkpoint after the first element`);
          continue;
        }
        if (typeof item.conversationId !== 'string') fail(`${context}: chunk without conversationId ${JSON.stringify(item)}`);
        const p = item.position;
        if (!p || !Number.isFinite(p.batch) || !Number.isFinite(p.index)) {
          fail(`${context}: chunk without a valid position ${JSON.stringify(item)}`);
          continue;
        }
        if (last !== undefined && !later(p, last)) fail(`${context}: position ${JSON.stringify(p)} not after ${JSON.stringify(last)}`);
        if (p.batch <= requestSeq) fail(`${context}: chunk of batch ${p.batch} at or before the request offset (seq ${requestSeq})`);
        if (upTo !== undefined && p.batch > upTo) fail(`${context}: chunk of batch ${p.batch} beyond the next offset (seq ${upTo})`);
        if (item.type === 'message-delta' && 'timestamp' in item) fail(`${context}: a message-delta with a timestamp`);
        if (item.type === 'conversation-reset') {
          const snapshot = (item as { snapshot?: { incarnation?: unknown; messages?: unknown; settlements?: unknown } }).snapshot;
          if (!Array.isArray(snapshot?.messages) || !Array.isArray(snapshot?.settlements)) fail(`${context}: a reset without a snapshot`);
          if (snapshot !== undefined && 'incarnation' in snapshot) fail(`${context}: a reset snapshot carrying an incarnation`);
        }
        last = p;
      }
      // A reset replaces every other chunk of its batch (§7).
      const byBatch = new Map<number, string[]>();
      for (const item of items) {
        if (item?.position === undefined || typeof item.type !== 'string') continue;
        byBatch.set(item.position.batch, [...(byBatch.get(item.position.batch) ?? []), item.type]);
      }
      for (const [batch, types] of byBatch) {
        if (types.includes('conversation-reset') && types.length > 1)
          fail(`${context}: batch ${batch} has a reset beside other chunks: ${types.join(', ')}`);
      }
      return last;
    };

    if (exchange.url.searchParams.get('live') === 'sse') {
      if (!(h['content-type'] ?? '').startsWith('text/event-stream')) fail(`SSE content-type ${h['content-type']}`);
      if (h['cache-control'] !== 'no-cache') fail(`SSE Cache-Control ${h['cache-control']}`);
      const events = exchange.events ?? [];
      const first = events[0];
      if (first !== undefined) {
        const parsed = first.event === 'data' ? (JSON.parse(first.data) as Item[]) : undefined;
        if (parsed?.length !== 1 || parsed[0]?.type !== 'stream-checkpoint' || typeof parsed[0].incarnation !== 'string') {
          fail(`the first SSE event is not data:[checkpoint] but ${first.event}:${first.data.slice(0, 120)}`);
        }
      }
      let last: Position | undefined;
      let pending: Item[] | undefined;
      let currentSeq = requestSeq;
      for (const event of events.slice(1)) {
        if (event.event === 'data') {
          if (pending !== undefined) fail('two data events without a control between them');
          const items = JSON.parse(event.data) as Item[];
          if (!Array.isArray(items) || items.length === 0)
            fail(`SSE data event that is not a non-empty array: ${event.data.slice(0, 120)}`);
          pending = items;
        } else if (event.event === 'control') {
          const control = JSON.parse(event.data) as { streamNextOffset?: string; upToDate?: unknown };
          if (
            typeof control.streamNextOffset !== 'string' ||
            (!OFFSET.test(control.streamNextOffset) && control.streamNextOffset !== '-1')
          ) {
            fail(`control without a valid streamNextOffset: ${event.data}`);
            continue;
          }
          if ('upToDate' in control && control.upToDate !== true) fail(`control upToDate present but not true: ${event.data}`);
          const seq = offsetSeq(control.streamNextOffset);
          if (seq < currentSeq) fail(`control offset went backwards: ${control.streamNextOffset} after seq ${currentSeq}`);
          if (pending !== undefined) last = checkItems(pending, seq, last, 'SSE data');
          pending = undefined;
          currentSeq = seq;
        } else fail(`unexpected SSE event type ${event.event}`);
      }
      continue;
    }

    // Plain and long-poll JSON.
    if (h['content-type'] !== 'application/json') fail(`updates content-type ${h['content-type']}`);
    if (h['cache-control'] !== 'no-store') fail(`updates Cache-Control ${h['cache-control']}`);
    const next = h['stream-next-offset'];
    if (next === undefined || (!OFFSET.test(next) && next !== '-1')) {
      fail(`updates without a valid Stream-Next-Offset: ${next}`);
      continue;
    }
    if (offsetSeq(next) < requestSeq) fail(`Stream-Next-Offset ${next} before the request offset`);
    const items = exchange.json as Item[];
    if (!Array.isArray(items) || items[0]?.type !== 'stream-checkpoint' || typeof items[0].incarnation !== 'string') {
      fail(`updates body does not start with a checkpoint: ${JSON.stringify(items).slice(0, 160)}`);
      continue;
    }
    checkItems(items.slice(1), offsetSeq(next), undefined, 'updates');
  }
  return problems;
}
