/**
 * The page at `GET /`: chat with either agent, watch replies stream in, decide pending approvals
 * (each counting down to its expiry; one nobody decided in time is shown expired).
 * Plain HTML with one inline script, no build step. It speaks the conversation protocol that
 * `createAgentRouter` serves (history, then `view=updates&live=sse` through EventSource) and
 * reduces the stream's chunks into messages the way the official clients do.
 *
 * One id names a conversation on this page: the agent *instance* id, the `:id` of
 * `/api/agents/<agent>/:id` and of `/api/approvals/:id`. The page labels it "instance id" and never
 * shows the `conversationId` that stream chunks carry (an internal id, `conv_…`), so an operator
 * who copies an id from the page copies the one the routes take.
 *
 * The script is kept free of backticks and dollar-brace sequences so it can live in this raw
 * template string unchanged.
 */
export const PAGE_HTML = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Flue example · agents on Durable Objects</title>
<link rel="icon" href="data:,">
<style>
  :root {
    --bg: #f5f6f8; --panel: #fff; --line: #e2e5ea; --text: #1d2430; --muted: #667085;
    --accent: #3457d5; --accent-soft: #eef2ff; --brand: #f38020;
    --ok: #23864a; --ok-soft: #e8f6ee; --bad: #c92a2a; --bad-soft: #fdecec;
    --wait: #b25e09; --wait-soft: #fff4e5; --radius: 10px;
    --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  }
  * { box-sizing: border-box; }
  html, body { height: 100%; }
  body { margin: 0; background: var(--bg); color: var(--text);
    font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
  button, input, textarea { font: inherit; color: inherit; }
  code, .mono { font-family: var(--mono); font-size: 0.88em; }
  .muted { color: var(--muted); }
  [hidden] { display: none !important; }

  .topbar { height: 56px; display: flex; align-items: center; justify-content: space-between;
    padding: 0 20px; background: var(--panel); border-bottom: 1px solid var(--line); }
  .brand { display: flex; align-items: baseline; gap: 10px; }
  .brand strong { font-size: 17px; }
  .logo { color: var(--brand); font-size: 18px; }
  .pill { font-size: 13px; padding: 3px 10px; border-radius: 999px; border: 1px solid var(--line);
    color: var(--muted); background: var(--panel); white-space: nowrap; }
  .pill::before { content: "●"; margin-right: 6px; }
  .pill.live { color: var(--ok); border-color: #bfe3cc; background: var(--ok-soft); }
  .pill.reconnecting, .pill.connecting { color: var(--wait); border-color: #f6d7ae; background: var(--wait-soft); }

  .layout { display: grid; grid-template-columns: 290px 1fr; height: calc(100% - 56px); }
  .sidebar { border-right: 1px solid var(--line); background: var(--panel); padding: 18px 16px;
    overflow-y: auto; display: flex; flex-direction: column; gap: 22px; }
  .sidebar h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted);
    margin: 0 0 8px; }
  .agent-list { display: grid; gap: 8px; }
  .agent { text-align: left; display: grid; gap: 2px; padding: 10px 12px; border-radius: var(--radius);
    border: 1px solid var(--line); background: var(--panel); cursor: pointer; }
  .agent span { font-size: 13px; color: var(--muted); }
  .agent:hover { border-color: #c5cbd5; }
  .agent[aria-checked="true"] { border-color: var(--accent); background: var(--accent-soft);
    box-shadow: inset 3px 0 0 var(--accent); }
  .row { display: flex; gap: 8px; }
  input[type="text"], textarea { width: 100%; padding: 8px 10px; border: 1px solid var(--line);
    border-radius: 8px; background: #fff; outline: none; }
  input[type="text"]:focus, textarea:focus { border-color: var(--accent); box-shadow: 0 0 0 3px var(--accent-soft); }
  button.primary, button.secondary, button.approve, button.deny { border-radius: 8px; padding: 8px 14px;
    cursor: pointer; font-weight: 600; border: 1px solid transparent; }
  button.primary { background: var(--accent); color: #fff; }
  button.secondary { background: #fff; border-color: var(--line); }
  button.secondary:hover { background: var(--bg); }
  button.wide { width: 100%; margin-top: 8px; }
  button:disabled { opacity: .55; cursor: default; }
  .recent { list-style: none; margin: 10px 0 0; padding: 0; display: grid; gap: 2px; }
  .recent button { width: 100%; text-align: left; background: none; border: 0; padding: 6px 8px;
    border-radius: 6px; cursor: pointer; display: flex; justify-content: space-between; gap: 8px; }
  .recent button:hover { background: var(--bg); }
  .recent button.current { background: var(--accent-soft); }
  .recent .who { font-size: 12px; color: var(--muted); }
  .field { display: grid; gap: 4px; font-size: 13px; color: var(--muted); }
  .hint { font-size: 12px; color: var(--muted); margin: 8px 0 0; }

  .chat { display: flex; flex-direction: column; min-height: 0; min-width: 0; }
  .chat-head { padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--panel);
    display: flex; justify-content: space-between; align-items: center; gap: 12px; }
  .chat-head h1 { font-size: 17px; margin: 0; }
  .messages { flex: 1; overflow-y: auto; list-style: none; margin: 0; padding: 20px 24px;
    display: flex; flex-direction: column; gap: 14px; }
  .empty { margin: auto; text-align: center; color: var(--muted); max-width: 420px; }
  .empty strong { color: var(--text); display: block; font-size: 16px; margin-bottom: 4px; }
  .msg { display: flex; gap: 10px; max-width: 760px; }
  .msg.user { align-self: flex-end; justify-content: flex-end; }
  .avatar { flex: none; width: 30px; height: 30px; border-radius: 50%; background: var(--accent-soft);
    color: var(--accent); font-size: 12px; font-weight: 700; display: grid; place-items: center; }
  .bubble { background: var(--panel); border: 1px solid var(--line); border-radius: 14px;
    padding: 9px 13px; min-width: 0; display: grid; gap: 8px; }
  .msg.user .bubble { background: var(--accent); border-color: var(--accent); color: #fff; }
  .text { white-space: pre-wrap; overflow-wrap: anywhere; }
  .text a { color: inherit; }
  .text.streaming::after { content: "▍"; color: var(--accent); animation: blink 1s steps(2) infinite; }
  @keyframes blink { 50% { opacity: 0; } }
  details.reasoning { color: var(--muted); font-size: 14px; }
  details pre, .tool pre { margin: 6px 0 0; padding: 8px; background: var(--bg); border-radius: 6px;
    overflow-x: auto; font-size: 12px; }
  .tool { border: 1px solid var(--line); border-radius: 8px; padding: 8px 10px; background: #fafbfc;
    font-size: 14px; }
  .tool-head { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
  .badge { font-size: 12px; font-weight: 600; padding: 1px 8px; border-radius: 999px;
    background: var(--bg); color: var(--muted); }
  .badge.ok { background: var(--ok-soft); color: var(--ok); }
  .badge.bad { background: var(--bad-soft); color: var(--bad); }
  .badge.wait { background: var(--wait-soft); color: var(--wait); }
  .args { display: grid; grid-template-columns: auto 1fr; gap: 2px 12px; margin: 6px 0 0; }
  .args dt { color: var(--muted); }
  .args dd { margin: 0; font-family: var(--mono); font-size: 13px; overflow-wrap: anywhere; }
  .tool .error-text { color: var(--bad); margin-top: 4px; }

  .event { align-self: center; max-width: 640px; font-size: 13px; color: var(--muted);
    display: flex; gap: 8px; align-items: baseline; text-align: left; }
  .event .label { font-weight: 600; white-space: nowrap; }
  .event.result { border: 1px solid var(--line); background: var(--panel); border-radius: var(--radius);
    padding: 8px 12px; color: var(--text); font-size: 14px; }
  .event.result.ok { border-color: #bfe3cc; background: var(--ok-soft); }
  .event.result.ok .label { color: var(--ok); }
  .event.result.bad { border-color: #f3c2c2; background: var(--bad-soft); }
  .event.result.bad .label, .event.failed .label { color: var(--bad); }
  .typing { color: var(--muted); font-size: 14px; }
  .dots::after { content: "…"; animation: blink 1.2s steps(2) infinite; }

  .approvals { padding: 12px 24px 0; display: grid; gap: 10px; border-top: 1px solid var(--line);
    background: var(--panel); }
  .approvals h2 { margin: 0; font-size: 13px; color: var(--wait); text-transform: uppercase; letter-spacing: .05em; }
  .approval { border: 1px solid #f6d7ae; background: var(--wait-soft); border-radius: var(--radius);
    padding: 12px 14px; display: grid; gap: 8px; }
  .approval p { margin: 0; }
  .approval .args { background: #fff; border-radius: 8px; padding: 8px 10px; margin: 0; }
  .approval-actions { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
  button.approve { background: var(--ok); color: #fff; }
  button.deny { background: #fff; border-color: #e7b4b4; color: var(--bad); }
  .approval .error-text { color: var(--bad); font-size: 14px; }
  .approval .countdown { font-weight: 600; color: var(--wait); font-variant-numeric: tabular-nums; }
  .approval .countdown.over { color: var(--bad); }

  .error { margin: 0 24px; padding: 8px 12px; border-radius: 8px; background: var(--bad-soft);
    color: var(--bad); font-size: 14px; }
  .composer { padding: 12px 24px 18px; background: var(--panel); display: grid; gap: 8px; }
  .composer textarea { resize: none; min-height: 42px; max-height: 160px; }
  .suggestions { display: flex; gap: 6px; flex-wrap: wrap; }
  .suggestions span { font-size: 13px; color: var(--muted); align-self: center; }
  .chip { border: 1px solid var(--line); background: #fff; border-radius: 999px; padding: 3px 11px;
    font-size: 13px; cursor: pointer; }
  .chip:hover { border-color: var(--accent); color: var(--accent); }

  @media (max-width: 820px) {
    .layout { grid-template-columns: 1fr; grid-template-rows: auto 1fr; height: auto; min-height: calc(100% - 56px); }
    .sidebar { border-right: 0; border-bottom: 1px solid var(--line); }
    .brand .muted { display: none; }
  }
</style>
</head>
<body>
<header class="topbar">
  <div class="brand"><span class="logo" aria-hidden="true">◆</span><strong>Flue</strong>
    <span class="muted">example app · every conversation is its own Durable Object</span></div>
  <span id="connection" class="pill">Starting</span>
</header>
<div class="layout">
  <aside class="sidebar">
    <section>
      <h2>Agent</h2>
      <div class="agent-list" role="radiogroup" aria-label="Agent">
        <button type="button" class="agent" role="radio" data-agent="release-manager">
          <strong>Release manager</strong>
          <span>Publishes packages. Stable versions wait for an operator's approval.</span>
        </button>
        <button type="button" class="agent" role="radio" data-agent="order-assistant">
          <strong>Order assistant</strong>
          <span>Looks up the status of an order by its id.</span>
        </button>
      </div>
    </section>
    <section>
      <h2>Conversation</h2>
      <form id="open-form" class="row">
        <input id="conversation-id" type="text" aria-label="Instance id" placeholder="instance id"
          title="The agent instance id, as in the page's URL and /api/agents/&lt;agent&gt;/&lt;id&gt;"
          autocomplete="off" spellcheck="false">
        <button type="submit" class="secondary">Open</button>
      </form>
      <button id="new-conversation" type="button" class="secondary wide">+ New conversation</button>
      <ul id="recent" class="recent" aria-label="Recent conversations"></ul>
    </section>
    <section>
      <h2>Operator</h2>
      <label class="field">Operator token
        <input id="operator-token" type="password" placeholder="required to approve or deny" autocomplete="off">
      </label>
      <label class="field">Approving as
        <input id="operator" type="text" placeholder="Demo operator" autocomplete="off">
      </label>
      <p class="hint">Decisions need the Worker's OPERATOR_TOKEN (npm run dev prints it). Kept for this tab only.</p>
    </section>
  </aside>
  <main class="chat">
    <div class="chat-head">
      <div>
        <h1 id="title">Release manager</h1>
        <div id="subtitle" class="muted" title="The id the routes take: /api/agents/&lt;agent&gt;/&lt;id&gt; and /api/approvals/&lt;id&gt;">instance id <span id="instance-id" class="mono"></span></div>
      </div>
    </div>
    <ol id="messages" class="messages" aria-live="polite"></ol>
    <section id="approvals" class="approvals" aria-label="Pending approvals" hidden></section>
    <div id="error" class="error" role="alert" hidden></div>
    <form id="composer" class="composer">
      <div id="suggestions" class="suggestions"></div>
      <div class="row">
        <textarea id="input" rows="1" aria-label="Message" placeholder="Write a message"></textarea>
        <button id="send" type="submit" class="primary">Send</button>
      </div>
    </form>
  </main>
</div>
<script>
(() => {
  'use strict';

  const AGENTS = {
    'release-manager': {
      name: 'Release manager', initials: 'RM',
      placeholder: 'Message the release manager, e.g. publish pkg@1.2.0',
      examples: ['publish pkg@1.2.0', 'publish pkg@1.3.0-next.1', 'What can you do?'],
    },
    'order-assistant': {
      name: 'Order assistant', initials: 'OA',
      placeholder: 'Ask about an order, e.g. Where is order 7?',
      examples: ['Where is order 7?', 'What about order 42?'],
    },
  };
  const RECENT_KEY = 'flue-example:recent';
  const OPERATOR_KEY = 'flue-example:operator';
  const TOKEN_KEY = 'flue-example:operator-token';

  const $ = (id) => document.getElementById(id);
  const els = {
    connection: $('connection'), title: $('title'), instanceId: $('instance-id'), messages: $('messages'),
    approvals: $('approvals'), error: $('error'), composer: $('composer'), input: $('input'), send: $('send'),
    suggestions: $('suggestions'), openForm: $('open-form'), idInput: $('conversation-id'),
    newConversation: $('new-conversation'), recent: $('recent'), operator: $('operator'),
    token: $('operator-token'),
  };

  const state = {
    agent: 'release-manager', id: '', gen: 0,
    loaded: false, exists: false, messages: [], settlements: [],
    incarnation: null, offset: '-1', last: { batch: -1, index: Infinity },
    es: null, timer: 0, failures: 0, connection: 'idle',
    waiting: new Set(),     // submissions sent from this page and not settled yet
    decisions: new Map(),   // approvalId -> { decision, busy, sent, error } (this page's clicks)
    sending: false, error: '',
  };

  // ── small helpers ────────────────────────────────────────────────────────────────────────

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') el.className = value;
      else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  /** A fresh instance id; deliberately unlike the conv_… conversationId of stream chunks. */
  function newConversationId() {
    const bytes = crypto.getRandomValues(new Uint8Array(5));
    return 'chat-' + Array.from(bytes, (b) => (b % 36).toString(36)).join('');
  }

  function conversationUrl() {
    return '/api/agents/' + state.agent + '/' + encodeURIComponent(state.id);
  }

  function seqOf(offset) {
    const match = /^\d+_(\d+)$/.exec(offset || '');
    return match ? Number(match[1]) : -1;
  }

  function pretty(value) {
    return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  }

  async function errorDetail(response) {
    try {
      const body = await response.json();
      const error = body && body.error;
      if (typeof error === 'string') return error;
      if (error && typeof error.message === 'string') return error.message;
      return JSON.stringify(body);
    } catch {
      return response.statusText || 'no details';
    }
  }

  /** Text with its URLs as links (built as nodes, never as HTML). */
  function linkified(text) {
    const nodes = [];
    const pattern = /https?:\/\/[^\s<>"')]+/g;
    let at = 0;
    for (const match of text.matchAll(pattern)) {
      let url = match[0].replace(/[.,;:!?]+$/, '');
      if (match.index > at) nodes.push(text.slice(at, match.index));
      nodes.push(h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url));
      at = match.index + url.length;
    }
    if (at < text.length) nodes.push(text.slice(at));
    return nodes;
  }

  function setError(message) {
    state.error = message || '';
    els.error.textContent = state.error;
    els.error.hidden = state.error === '';
  }

  function setConnection(kind) {
    state.connection = kind;
    const labels = { idle: 'Idle', connecting: 'Connecting', live: 'Live', reconnecting: 'Reconnecting', new: 'Not started' };
    els.connection.textContent = labels[kind] || kind;
    els.connection.className = 'pill ' + kind;
  }

  // ── conversations ────────────────────────────────────────────────────────────────────────

  function readRecent() {
    try {
      const list = JSON.parse(localStorage.getItem(RECENT_KEY) || '[]');
      return Array.isArray(list) ? list.filter((r) => r && AGENTS[r.agent] && typeof r.id === 'string') : [];
    } catch {
      return [];
    }
  }

  function remember(agent, id) {
    const list = readRecent().filter((r) => !(r.agent === agent && r.id === id));
    list.unshift({ agent, id });
    try { localStorage.setItem(RECENT_KEY, JSON.stringify(list.slice(0, 8))); } catch { /* private mode */ }
  }

  function openConversation(agent, id) {
    stopStream();
    clearTimeout(state.timer);
    state.gen += 1;
    Object.assign(state, {
      agent, id, loaded: false, exists: false, messages: [], settlements: [], incarnation: null, offset: '-1',
      last: { batch: -1, index: Infinity }, failures: 0,
    });
    state.waiting = new Set();
    state.decisions = new Map();
    setError('');
    history.replaceState(null, '', '#/' + agent + '/' + encodeURIComponent(id));
    remember(agent, id);
    render();
    hydrate(state.gen);
  }

  /** History first (or "not started" on 404), then the live updates from its offset. */
  async function hydrate(gen) {
    setConnection('connecting');
    let response;
    try {
      response = await fetch(conversationUrl() + '?view=history', { cache: 'no-store' });
    } catch {
      if (gen === state.gen) retryHydrate(gen);
      return;
    }
    if (gen !== state.gen) return;
    if (response.status === 404) {
      state.loaded = true;
      state.exists = false;
      setConnection('new');
      render();
      return;
    }
    if (!response.ok) {
      setError('Could not load the conversation (' + response.status + '): ' + (await errorDetail(response)));
      retryHydrate(gen);
      return;
    }
    const snapshot = await response.json();
    if (gen !== state.gen) return;
    applySnapshot(snapshot);
    state.incarnation = snapshot.incarnation || null;
    state.offset = snapshot.offset;
    state.last = { batch: seqOf(snapshot.offset), index: Infinity };
    state.loaded = true;
    state.exists = true;
    state.failures = 0;
    setError('');
    render();
    startStream(gen);
  }

  function retryHydrate(gen) {
    setConnection('reconnecting');
    state.failures += 1;
    clearTimeout(state.timer);
    state.timer = setTimeout(() => { if (gen === state.gen) hydrate(gen); }, backoff());
  }

  function backoff() {
    return Math.min(500 * 2 ** Math.min(state.failures, 5), 15000);
  }

  function stopStream() {
    if (state.es) state.es.close();
    state.es = null;
  }

  /** One SSE connection of the updates view; reconnects from the last control offset. */
  function startStream(gen) {
    stopStream();
    const url = conversationUrl() + '?view=updates&offset=' + encodeURIComponent(state.offset) + '&live=sse';
    const es = new EventSource(url);
    state.es = es;
    es.onopen = () => {
      if (state.es !== es) return;
      state.failures = 0;
      setConnection('live');
    };
    es.addEventListener('data', (event) => {
      if (state.es === es) applyChunks(gen, JSON.parse(event.data));
    });
    es.addEventListener('control', (event) => {
      if (state.es !== es) return;
      const control = JSON.parse(event.data);
      if (typeof control.streamNextOffset === 'string') state.offset = control.streamNextOffset;
      if (state.connection !== 'live') setConnection('live');
    });
    es.onerror = () => {
      if (state.es !== es) return;
      // The browser would retry from the original offset; reconnect by hand from the latest one.
      stopStream();
      state.failures += 1;
      setConnection('reconnecting');
      clearTimeout(state.timer);
      state.timer = setTimeout(() => {
        if (gen !== state.gen) return;
        if (state.failures >= 3) hydrate(gen); // e.g. the stream was recreated: start over
        else startStream(gen);
      }, backoff());
    };
  }

  // ── the client reduction of streaming-protocol.md §7 ─────────────────────────────────────

  function applySnapshot(snapshot) {
    state.messages = structuredClone(snapshot.messages || []);
    state.settlements = structuredClone(snapshot.settlements || []);
  }

  function applyChunks(gen, chunks) {
    for (const chunk of chunks) {
      if (chunk.type === 'stream-checkpoint') {
        if (state.incarnation && chunk.incarnation !== state.incarnation) {
          // A new incarnation of the stream: what we hold no longer applies.
          stopStream();
          hydrate(gen);
          return;
        }
        state.incarnation = chunk.incarnation;
        continue;
      }
      const p = chunk.position;
      if (p) {
        const seen = p.batch < state.last.batch || (p.batch === state.last.batch && p.index <= state.last.index);
        if (seen) continue;
        state.last = { batch: p.batch, index: p.index };
      }
      applyChunk(chunk);
    }
    scheduleRender();
  }

  function findMessage(id) {
    return state.messages.find((m) => m.id === id);
  }

  function assistantMessage(id, extra) {
    let message = findMessage(id);
    if (!message) {
      message = Object.assign({ id, role: 'assistant', purpose: 'assistant', display: 'visible', parts: [] }, extra || {});
      state.messages.push(message);
    }
    return message;
  }

  function closeStreaming(message) {
    for (const part of message.parts) {
      if ((part.type === 'text' || part.type === 'reasoning') && part.state === 'streaming') part.state = 'done';
    }
  }

  function findToolPart(toolCallId) {
    for (let i = state.messages.length - 1; i >= 0; i -= 1) {
      const part = state.messages[i].parts.find((x) => x.type === 'dynamic-tool' && x.toolCallId === toolCallId);
      if (part) return part;
    }
    return undefined;
  }

  function deepMerge(target, source) {
    for (const [key, value] of Object.entries(source || {})) {
      const current = target[key];
      if (value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object' && !Array.isArray(current)) {
        deepMerge(current, value);
      } else {
        target[key] = value;
      }
    }
    return target;
  }

  function applyChunk(chunk) {
    switch (chunk.type) {
      case 'conversation-reset':
        applySnapshot(chunk.snapshot);
        break;
      case 'message-appended': {
        const index = state.messages.findIndex((m) => m.id === chunk.message.id);
        if (index === -1) state.messages.push(chunk.message);
        else state.messages[index] = chunk.message;
        break;
      }
      case 'message-started': {
        const extra = {};
        for (const key of ['submissionId', 'turnId', 'metadata']) if (chunk[key] !== undefined) extra[key] = chunk[key];
        assistantMessage(chunk.messageId, extra);
        break;
      }
      case 'message-delta': {
        const message = assistantMessage(chunk.messageId);
        const last = message.parts[message.parts.length - 1];
        if (last && last.type === chunk.kind && last.state === 'streaming') {
          last.text += chunk.delta;
        } else {
          closeStreaming(message);
          message.parts.push({ type: chunk.kind, text: chunk.delta, state: 'streaming' });
        }
        break;
      }
      case 'tool-input': {
        if (findToolPart(chunk.toolCallId)) break;
        const message = assistantMessage(chunk.messageId);
        closeStreaming(message);
        message.parts.push({
          type: 'dynamic-tool', toolName: chunk.toolName, toolCallId: chunk.toolCallId,
          state: 'input-available', input: chunk.input,
        });
        break;
      }
      case 'tool-output': {
        const part = findToolPart(chunk.toolCallId);
        if (part) Object.assign(part, { state: 'output-available', output: chunk.output, durationMs: chunk.durationMs });
        break;
      }
      case 'tool-output-error': {
        const part = findToolPart(chunk.toolCallId);
        if (part) Object.assign(part, { state: 'output-error', errorText: chunk.errorText, durationMs: chunk.durationMs });
        break;
      }
      case 'message-completed': {
        const message = findMessage(chunk.messageId);
        if (message) closeStreaming(message);
        break;
      }
      case 'message-metadata': {
        const message = findMessage(chunk.messageId);
        if (message) message.metadata = deepMerge(message.metadata || {}, chunk.metadata);
        break;
      }
      case 'data-part': {
        const message = assistantMessage(chunk.messageId);
        const type = 'data-' + chunk.name;
        const part = message.parts.find((x) => x.type === type);
        if (part) part.data = chunk.data;
        else message.parts.push({ type, data: chunk.data });
        break;
      }
      case 'submission-settled': {
        const settlement = { submissionId: chunk.submissionId, outcome: chunk.outcome };
        if (chunk.error !== undefined) settlement.error = chunk.error;
        if (chunk.answeredBySubmissionId !== undefined) settlement.answeredBySubmissionId = chunk.answeredBySubmissionId;
        const index = state.settlements.findIndex((s) => s.submissionId === chunk.submissionId);
        if (index === -1) state.settlements.push(settlement);
        else state.settlements[index] = settlement;
        break;
      }
      default:
        break;
    }
  }

  // ── approvals ────────────────────────────────────────────────────────────────────────────

  /**
   * Decisions seen in the conversation: approvalId -> the attributes of the signals that name it,
   * merged: the decision's ({ decision, approver }) and the gate's result ({ outcome, approver };
   * outcome 'expired' when nobody decided in time).
   */
  function decisionsInConversation() {
    const decided = new Map();
    for (const message of state.messages) {
      const attributes = message.signal && message.signal.attributes;
      if (attributes && attributes.approvalId) {
        decided.set(attributes.approvalId, Object.assign({}, decided.get(attributes.approvalId), attributes));
      }
    }
    return decided;
  }

  /** Pending requests: pending_approval tool outputs no decision message names yet (seed Approvals.tsx). */
  function pendingApprovals(decided) {
    const pending = [];
    for (const message of state.messages) {
      for (const part of message.parts) {
        if (part.type === 'dynamic-tool' && part.state === 'output-available' && part.output &&
            part.output.status === 'pending_approval' && !decided.has(part.toolCallId)) {
          pending.push({ approvalId: part.toolCallId, toolName: part.toolName, input: part.input,
            argsDigest: part.output.argsDigest, expiresAt: part.output.expiresAt });
        }
      }
    }
    return pending;
  }

  /** Milliseconds until an ISO time (negative once past); NaN without one. */
  function msUntil(iso) {
    return iso ? Date.parse(iso) - Date.now() : NaN;
  }

  /** "Expires in 4:59" while it runs; once past, the gate's timer is about to record the expiry. */
  function countdownText(expiresAt) {
    const left = msUntil(expiresAt);
    if (!(left > 0)) return 'Expired: nobody decided in time';
    const seconds = Math.ceil(left / 1000);
    const mm = Math.floor(seconds / 60);
    const ss = seconds % 60;
    return 'Expires in ' + mm + ':' + (ss < 10 ? '0' : '') + ss;
  }

  // The countdowns tick once a second without rebuilding the page; a card whose time ran out is
  // rendered again so its buttons close (the server refuses a late decision with 410 anyway).
  setInterval(() => {
    let ranOut = false;
    for (const el of document.querySelectorAll('.countdown[data-expires-at]')) {
      const text = countdownText(el.dataset.expiresAt);
      if (el.textContent !== text) el.textContent = text;
      if (!(msUntil(el.dataset.expiresAt) > 0) && !el.classList.contains('over')) ranOut = true;
    }
    if (ranOut) render();
  }, 1000);

  async function decide(approvalId, decision, argsDigest) {
    const token = els.token.value.trim();
    if (!token) {
      state.decisions.set(approvalId, { decision, busy: false, sent: false, error: 'Enter the operator token to decide.' });
      render();
      els.token.focus();
      return;
    }
    const mine = { decision, busy: true, sent: false, error: '' };
    state.decisions.set(approvalId, mine);
    render();
    const gen = state.gen;
    const headers = { 'content-type': 'application/json', authorization: 'Bearer ' + token };
    const operator = els.operator.value.trim();
    if (operator) headers['x-operator'] = operator;
    try {
      const response = await fetch('/api/approvals/' + encodeURIComponent(state.id), {
        method: 'POST', headers, body: JSON.stringify({ approvalId, decision, argsDigest }),
      });
      if (response.ok) {
        const receipt = await response.json();
        if (gen === state.gen && receipt.submissionId) state.waiting.add(receipt.submissionId);
        mine.sent = true;
      } else if (response.status === 409) {
        mine.error = 'This request was already decided differently.';
      } else if (response.status === 410) {
        mine.error = 'This request expired before the decision arrived.';
      } else if (response.status === 401) {
        mine.error = 'The operator token was not accepted.';
      } else {
        mine.error = 'The decision was not accepted (' + response.status + '): ' + (await errorDetail(response));
      }
    } catch (error) {
      mine.error = 'Could not reach the server: ' + error.message;
    }
    mine.busy = false;
    if (gen === state.gen) render();
  }

  // ── sending ──────────────────────────────────────────────────────────────────────────────

  async function send(text) {
    if (text.trim() === '' || state.sending) return;
    const gen = state.gen;
    state.sending = true;
    setError('');
    render();
    try {
      const response = await fetch(conversationUrl(), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'user', body: text }),
      });
      if (gen !== state.gen) return;
      if (!response.ok) {
        setError('The message was not sent (' + response.status + '): ' + (await errorDetail(response)));
        return;
      }
      const receipt = await response.json();
      if (gen !== state.gen) return;
      state.waiting.add(receipt.submissionId);
      if (els.input.value === text) els.input.value = '';
      if (!state.exists) {
        // The first message created the conversation: follow it from the start.
        state.exists = true;
        state.offset = '-1';
        state.last = { batch: -1, index: Infinity };
        startStream(gen);
      }
    } catch (error) {
      if (gen === state.gen) setError('Could not reach the server: ' + error.message);
    } finally {
      if (gen === state.gen) {
        state.sending = false;
        render();
        els.input.focus();
      }
    }
  }

  // ── rendering ────────────────────────────────────────────────────────────────────────────

  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; render(); });
  }

  function argsList(input) {
    if (input && typeof input === 'object' && !Array.isArray(input)) {
      const entries = Object.entries(input);
      if (entries.every(([, v]) => v === null || typeof v !== 'object')) {
        return h('dl', { class: 'args' }, entries.map(([k, v]) => [h('dt', null, k), h('dd', null, String(v))]));
      }
    }
    return h('pre', null, pretty(input));
  }

  function toolStatus(part, decided) {
    if (part.state === 'input-available') return ['running', ''];
    if (part.state === 'output-error') return ['failed', 'bad'];
    const status = part.output && part.output.status;
    if (status === 'pending_approval') {
      const decision = decided.get(part.toolCallId);
      if (!decision) return ['waiting for approval', 'wait'];
      if (decision.outcome === 'expired') return ['expired', 'bad'];
      const approved = decision.decision ? decision.decision === 'approve' : decision.outcome === 'approved';
      return approved ? ['approved by ' + (decision.approver || 'an operator'), 'ok']
        : ['denied by ' + (decision.approver || 'an operator'), 'bad'];
    }
    return ['done', 'ok'];
  }

  function toolView(part, decided) {
    const [label, tone] = toolStatus(part, decided);
    const pendingGate = part.state === 'output-available' && part.output && part.output.status === 'pending_approval';
    return h('div', { class: 'tool', 'data-tool-call-id': part.toolCallId },
      h('div', { class: 'tool-head' }, h('span', { 'aria-hidden': 'true' }, '⚙'), h('code', null, part.toolName),
        h('span', { class: 'badge ' + tone }, label)),
      argsList(part.input),
      part.state === 'output-available' && !pendingGate
        ? h('details', null, h('summary', null, 'Result'), h('pre', null, pretty(part.output))) : null,
      part.state === 'output-error' ? h('div', { class: 'error-text' }, part.errorText) : null);
  }

  function partView(part, decided) {
    if (part.type === 'text') {
      return h('div', { class: 'text' + (part.state === 'streaming' ? ' streaming' : '') }, linkified(part.text));
    }
    if (part.type === 'reasoning') {
      return h('details', { class: 'reasoning' }, h('summary', null, 'Thinking'), h('div', { class: 'text' }, part.text));
    }
    if (part.type === 'dynamic-tool') return toolView(part, decided);
    if (part.type === 'file') {
      const name = part.filename || part.id || 'attachment';
      const href = part.url || (part.id ? conversationUrl() + '/attachments/' + encodeURIComponent(part.id) : null);
      return href ? h('a', { href, target: '_blank', rel: 'noopener' }, '📎 ' + name) : h('span', null, '📎 ' + name);
    }
    if (part.type.startsWith('data-')) {
      return h('details', null, h('summary', null, part.type), h('pre', null, pretty(part.data)));
    }
    return null;
  }

  function textOf(message) {
    return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
  }

  /** A hand-written gate's result signal (the seed's) names the approval id in parentheses, without attributes. */
  function approvalResultOf(message, knownIds) {
    const text = textOf(message);
    for (const id of knownIds) {
      if (!text.includes('(' + id + ')')) continue;
      if (/ was approved but failed: /.test(text)) return 'bad';
      if (/ denied /.test(text)) return 'bad';
      return 'ok';
    }
    return null;
  }

  function eventView(message, knownIds) {
    const text = textOf(message);
    const attributes = (message.signal && message.signal.attributes) || {};
    if (attributes.approvalId && attributes.outcome) {
      // The shipped gate's result: its attributes say how the request ended.
      const expired = attributes.outcome === 'expired';
      const tone = attributes.outcome === 'approved' ? 'ok' : 'bad';
      return h('li', { class: 'event result ' + tone + (expired ? ' expired' : ''), 'data-approval-id': attributes.approvalId },
        h('span', { class: 'label' }, expired ? 'Approval expired' : 'Approval result'), h('span', { class: 'text' }, linkified(text)));
    }
    if (attributes.approvalId) {
      const approved = attributes.decision === 'approve';
      return h('li', { class: 'event decision' },
        h('span', { class: 'label' }, approved ? '✓ Decision' : '✕ Decision'), h('span', null, text));
    }
    const result = approvalResultOf(message, knownIds);
    if (result) {
      return h('li', { class: 'event result ' + result },
        h('span', { class: 'label' }, 'Approval result'), h('span', { class: 'text' }, linkified(text)));
    }
    if (message.settlement) {
      return h('li', { class: 'event failed' },
        h('span', { class: 'label' }, message.settlement.outcome === 'aborted' ? 'Stopped' : 'Failed'), h('span', null, text));
    }
    return h('li', { class: 'event' }, h('span', { class: 'label' }, message.purpose === 'advisory' ? 'Note' : 'Signal'),
      h('span', null, text));
  }

  function messageView(message, decided, knownIds) {
    if (message.display === 'hidden') return null;
    // The delivery of a framework timer (the gate's expiry): its result message says what it did.
    const signal = (message.signal && message.signal.attributes) || {};
    if (signal.timerId && String(signal.name || '').startsWith('flue:')) return null;
    if (message.role === 'system') return eventView(message, knownIds);
    if (message.role === 'user') {
      return h('li', { class: 'msg user', 'data-message-id': message.id },
        h('div', { class: 'bubble' }, message.parts.map((p) => partView(p, decided))));
    }
    const parts = message.parts.map((p) => partView(p, decided)).filter(Boolean);
    if (parts.length === 0) parts.push(h('span', { class: 'typing dots' }, 'Thinking'));
    return h('li', { class: 'msg assistant', 'data-message-id': message.id },
      h('div', { class: 'avatar', 'aria-hidden': 'true' }, AGENTS[state.agent].initials),
      h('div', { class: 'bubble' }, parts));
  }

  function isWorking() {
    const settled = new Set(state.settlements.map((s) => s.submissionId));
    for (const id of state.waiting) if (settled.has(id)) state.waiting.delete(id);
    // A reply already on screen (streaming, or just started) shows its own progress.
    const last = state.messages[state.messages.length - 1];
    const replying = last && last.role === 'assistant' &&
      (last.parts.length === 0 || last.parts.some((p) => p.state === 'streaming'));
    return state.waiting.size > 0 && !replying;
  }

  function renderMessages(decided) {
    const list = els.messages;
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    const knownIds = new Set();
    for (const message of state.messages) {
      for (const part of message.parts) if (part.type === 'dynamic-tool') knownIds.add(part.toolCallId);
    }
    const items = state.messages.map((m) => messageView(m, decided, knownIds)).filter(Boolean);
    if (isWorking()) {
      items.push(h('li', { class: 'msg assistant' },
        h('div', { class: 'avatar', 'aria-hidden': 'true' }, AGENTS[state.agent].initials),
        h('div', { class: 'bubble typing' }, h('span', { class: 'dots' }, AGENTS[state.agent].name + ' is working'))));
    }
    if (items.length === 0 && !state.loaded) {
      items.push(h('li', { class: 'empty' }, h('span', { class: 'dots' }, 'Loading the conversation')));
    } else if (items.length === 0) {
      items.push(h('li', { class: 'empty' }, h('strong', null, 'No messages yet'),
        'Send a message below to start this conversation. Try one of the suggestions.'));
    }
    list.replaceChildren(...items);
    if (atBottom) list.scrollTop = list.scrollHeight;
  }

  function renderApprovals(decided) {
    const pending = pendingApprovals(decided);
    els.approvals.hidden = pending.length === 0;
    if (pending.length === 0) {
      els.approvals.replaceChildren();
      return;
    }
    const cards = pending.map(({ approvalId, toolName, input, argsDigest, expiresAt }) => {
      const mine = state.decisions.get(approvalId);
      const over = Boolean(expiresAt) && !(msUntil(expiresAt) > 0);
      const busy = Boolean(mine && (mine.busy || mine.sent)) || over;
      const note = mine && mine.sent ? (mine.decision === 'approve' ? 'Approved. Waiting for the agent' : 'Denied. Waiting for the agent') : '';
      return h('article', { class: 'approval', 'data-approval-id': approvalId },
        h('p', null, h('strong', null, AGENTS[state.agent].name), ' wants to run ', h('code', null, toolName), ' with:'),
        argsList(input),
        expiresAt ? h('p', { class: 'countdown' + (over ? ' over' : ''), 'data-expires-at': expiresAt, title: 'Undecided, the request is denied at ' + expiresAt },
          countdownText(expiresAt)) : null,
        h('div', { class: 'approval-actions' },
          h('button', { type: 'button', class: 'approve', disabled: busy, onclick: () => decide(approvalId, 'approve', argsDigest) },
            mine && mine.busy && mine.decision === 'approve' ? 'Approving…' : 'Approve'),
          h('button', { type: 'button', class: 'deny', disabled: busy, onclick: () => decide(approvalId, 'deny', argsDigest) },
            mine && mine.busy && mine.decision === 'deny' ? 'Denying…' : 'Deny'),
          note ? h('span', { class: 'muted dots' }, note) : null,
          h('span', { class: 'muted mono', title: 'approval id' }, approvalId),
          argsDigest ? h('span', { class: 'muted mono digest', title: 'digest of the arguments this decision applies to: ' + argsDigest },
            argsDigest.slice(0, 19) + '…') : null),
        mine && mine.error ? h('div', { class: 'error-text' }, mine.error) : null);
    });
    els.approvals.replaceChildren(
      h('h2', null, pending.length === 1 ? 'Approval needed' : pending.length + ' approvals needed'), ...cards);
  }

  function renderChrome() {
    const agent = AGENTS[state.agent];
    els.title.textContent = agent.name;
    els.instanceId.textContent = state.id;
    els.input.placeholder = agent.placeholder;
    if (document.activeElement !== els.idInput) els.idInput.value = state.id;
    for (const button of document.querySelectorAll('.agent')) {
      button.setAttribute('aria-checked', String(button.dataset.agent === state.agent));
    }
    els.send.disabled = state.sending;
    els.suggestions.replaceChildren(h('span', null, 'Try:'), ...agent.examples.map((text) =>
      h('button', { type: 'button', class: 'chip', onclick: () => send(text) }, text)));
    els.recent.replaceChildren(...readRecent().map((r) =>
      h('li', null, h('button', {
        type: 'button', class: r.agent === state.agent && r.id === state.id ? 'current' : '',
        onclick: () => openConversation(r.agent, r.id),
      }, h('span', { class: 'mono' }, r.id), h('span', { class: 'who' }, AGENTS[r.agent].name)))));
  }

  function render() {
    const decided = decisionsInConversation();
    renderChrome();
    renderMessages(decided);
    renderApprovals(decided);
  }

  // ── wiring ───────────────────────────────────────────────────────────────────────────────

  els.composer.addEventListener('submit', (event) => {
    event.preventDefault();
    send(els.input.value);
  });
  els.input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send(els.input.value);
    }
  });
  els.input.addEventListener('input', () => {
    els.input.style.height = 'auto';
    els.input.style.height = Math.min(els.input.scrollHeight + 2, 160) + 'px';
  });
  els.openForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const id = els.idInput.value.trim();
    if (id) openConversation(state.agent, id);
  });
  els.newConversation.addEventListener('click', () => openConversation(state.agent, newConversationId()));
  for (const button of document.querySelectorAll('.agent')) {
    button.addEventListener('click', () => {
      if (button.dataset.agent !== state.agent) openConversation(button.dataset.agent, state.id || newConversationId());
    });
  }
  // The token is a credential: sessionStorage keeps it for this tab only, never across restarts.
  try { els.token.value = sessionStorage.getItem(TOKEN_KEY) || ''; } catch { /* storage disabled */ }
  els.token.addEventListener('change', () => {
    try { sessionStorage.setItem(TOKEN_KEY, els.token.value.trim()); } catch { /* storage disabled */ }
  });
  els.operator.value = localStorage.getItem(OPERATOR_KEY) || '';
  els.operator.addEventListener('change', () => {
    try { localStorage.setItem(OPERATOR_KEY, els.operator.value.trim()); } catch { /* private mode */ }
  });

  function fromHash() {
    const match = /^#\/([\w-]+)\/(.+)$/.exec(location.hash);
    if (match && AGENTS[match[1]]) {
      try { return { agent: match[1], id: decodeURIComponent(match[2]) }; } catch { /* bad escape */ }
    }
    return null;
  }
  window.addEventListener('hashchange', () => {
    const target = fromHash();
    if (target && (target.agent !== state.agent || target.id !== state.id)) openConversation(target.agent, target.id);
  });

  const start = fromHash();
  if (start) openConversation(start.agent, start.id);
  else openConversation('release-manager', newConversationId());
})();
</script>
</body>
</html>
`;
