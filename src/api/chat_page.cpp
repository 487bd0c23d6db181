#include "api/chat_page.h"

namespace hichat::api {

// The server is the source of truth for the conversations: their items (GET /v1/conversations/{id}/items)
// and their titles (metadata.title). The browser keeps only the list of ids, per origin and API key, since
// the OpenAI API has no "list conversations"; an id the server answers 404 for leaves the list with a note.
// Each turn is one streamed POST /v1/responses with `conversation` and truncation "auto"; Stop aborts the
// fetch (the server cancels on the disconnect and keeps no turn it cancelled).
std::string_view chat_page_html() {
    static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>HiChat</title>
<link rel="icon" href="data:,">
<style>
  :root { --bg:#f6f7f9; --fg:#1d2330; --muted:#6b7280; --me:#dbeafe; --bot:#ffffff; --line:#e5e7eb; --bad:#b91c1c;
          --pick:#eef2ff; }
  * { box-sizing: border-box; }
  body { margin:0; font:16px/1.5 system-ui, sans-serif; background:var(--bg); color:var(--fg);
         display:flex; flex-direction:column; height:100vh; }
  header { padding:10px 16px; border-bottom:1px solid var(--line); display:flex; flex-wrap:wrap; gap:12px;
           align-items:center; background:#fff; }
  header h1 { font-size:18px; margin:0; }
  header .status { color:var(--muted); font-size:14px; flex:1; }
  label { font-size:14px; color:var(--muted); display:flex; gap:6px; align-items:center; }
  input, aside textarea { padding:4px 8px; border:1px solid var(--line); border-radius:6px; font:inherit;
                          color:var(--fg); }
  #key { width:200px; }
  #key.attention { border-color:var(--bad); outline:2px solid var(--bad); }
  #main { flex:1; display:flex; min-height:0; }
  aside { width:260px; border-right:1px solid var(--line); background:#fff; display:flex; flex-direction:column;
          gap:8px; padding:12px; overflow-y:auto; }
  #conversations { list-style:none; margin:0; padding:0; display:flex; flex-direction:column; gap:2px; }
  #conversations li { display:flex; gap:4px; align-items:center; border-radius:6px; padding:2px 4px; }
  #conversations li.current { background:var(--pick); }
  #conversations .open { flex:1; text-align:left; background:none; color:var(--fg); padding:4px; overflow:hidden;
                         text-overflow:ellipsis; white-space:nowrap; }
  #conversations .rename, #conversations .delete { background:none; color:var(--muted); padding:2px 4px;
                                                   font-size:13px; }
  #conversations .rename-box { flex:1; min-width:0; }
  #list-note { color:var(--muted); font-size:13px; font-style:italic; margin:0; }
  #list-note:empty { display:none; }
  details { border-top:1px solid var(--line); padding-top:8px; margin-top:auto; }
  details label { flex-direction:column; align-items:stretch; gap:2px; margin-top:6px; }
  #system { resize:vertical; height:64px; }
  #chat { flex:1; display:flex; flex-direction:column; min-width:0; }
  #log { flex:1; overflow-y:auto; padding:16px; display:flex; flex-direction:column; gap:10px; }
  .msg { max-width:75%; padding:8px 12px; border-radius:10px; white-space:pre-wrap; word-wrap:break-word;
         border:1px solid var(--line); }
  .user { align-self:flex-end; background:var(--me); }
  .assistant, .system, .developer { align-self:flex-start; background:var(--bot); }
  .system, .developer { font-style:italic; }
  .stopped { opacity:.6; }
  .note, .stats { display:block; color:var(--muted); font-size:13px; }
  .note { font-style:italic; }
  .notice, .error { align-self:center; font-size:14px; border:0; max-width:90%; }
  .notice { color:var(--muted); }
  .error { color:var(--bad); }
  form { display:flex; gap:8px; padding:12px 16px; border-top:1px solid var(--line); background:#fff; }
  form textarea { flex:1; resize:none; height:52px; padding:8px; border:1px solid var(--line); border-radius:8px;
                  font:inherit; }
  button { padding:6px 18px; border:0; border-radius:8px; background:#2563eb; color:#fff; font:inherit;
           cursor:pointer; }
  button.secondary { background:#fff; color:var(--fg); border:1px solid var(--line); }
  button:disabled { opacity:.45; cursor:default; }
</style>
</head>
<body>
<header>
  <h1>HiChat</h1>
  <span class="status"><span id="model">connecting...</span> <span id="context"></span></span>
  <label for="key">API key
    <input id="key" type="password" placeholder="if the server needs one" autocomplete="off"></label>
</header>
<div id="main">
<aside>
  <button id="new-chat" type="button" class="secondary">New chat</button>
  <ul id="conversations" aria-label="Conversations"></ul>
  <p id="list-note" role="status"></p>
  <details id="settings">
    <summary>Settings</summary>
    <label for="system">System prompt
      <textarea id="system" placeholder="sent as instructions with every turn"></textarea></label>
    <label for="temperature">Temperature
      <input id="temperature" type="number" min="0" max="2" step="0.1" placeholder="server default"></label>
    <label for="max-output">Max output tokens
      <input id="max-output" type="number" min="1" step="1" placeholder="the room left"
             title="empty: a reply may use all the room left in the context"></label>
  </details>
</aside>
<section id="chat">
<div id="log" role="log" aria-live="polite"></div>
<form id="form">
  <textarea id="input" aria-label="Message" placeholder="Type a message and press Enter"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" class="secondary" disabled>Stop</button>
</form>
</section>
</div>
<script>
const $ = (id) => document.getElementById(id);
const log = $('log'), input = $('input'), sendButton = $('send'), stopButton = $('stop'), keyBox = $('key');
const listEl = $('conversations'), listNote = $('list-note');
const TITLE_CHARS = 60;     // a new conversation's title: the start of its first message
const MAX_STATS = 200;      // reply figures kept per conversation in the browser
let current = null;         // the open conversation: {id, title, metadata}; null before the first turn
let running = null;         // the AbortController of the turn in flight

// --- the API: every call sends the key; a failure becomes an Error with the server's status and field ---
function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (keyBox.value) h['Authorization'] = 'Bearer ' + keyBox.value;
  return h;
}
async function failure(r) {
  const e = await r.json().then((j) => j.error || {}, () => ({}));
  return Object.assign(new Error(e.message || r.statusText || 'HTTP ' + r.status),
                       { status: r.status, param: e.param, code: e.code });
}
async function api(method, path, body, signal) {
  const r = await fetch(path, { method, headers: headers(), signal,
                                body: body === undefined ? undefined : JSON.stringify(body) });
  if (!r.ok) throw await failure(r);
  return r;
}
const call = async (method, path, body) => (await api(method, path, body)).json();
const convPath = (id) => '/v1/conversations/' + encodeURIComponent(id);

// --- the list of this key's conversations, in localStorage under the origin and a hash of the key ---
function keyTag(key) {  // FNV-1a, 64 bits: tells keys apart without storing another copy of one
  if (!key) return 'no-key';
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(key)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, '0');
}
const listKey = () => 'hichat-conversations:' + location.origin + ':' + keyTag(keyBox.value);
function readList() {
  try { const l = JSON.parse(localStorage.getItem(listKey()) || '[]'); return Array.isArray(l) ? l : []; }
  catch { return []; }
}
const writeList = (list) => localStorage.setItem(listKey(), JSON.stringify(list));
const entry = (id) => readList().find((c) => c.id === id);
function updateEntry(id, change) {  // change(entry) edits it in place; the entry moves to the top if asked
  const list = readList(), i = list.findIndex((c) => c.id === id);
  if (i < 0) return;
  const [c] = list.splice(i, 1);
  const toTop = change(c);
  if (toTop) list.unshift(c); else list.splice(i, 0, c);
  writeList(list);
}
function dropEntry(id, why) {
  const c = entry(id);
  writeList(readList().filter((x) => x.id !== id));
  if (why) listNote.textContent = '"' + (c ? c.title : id) + '" ' + why;
  if (current && current.id === id) showNewChat();
  renderList();
}
function renderList() {
  const items = readList().map((c) => {
    const li = document.createElement('li'), open = document.createElement('button');
    li.dataset.id = c.id; li.classList.toggle('current', !!current && current.id === c.id);
    open.type = 'button'; open.className = 'open'; open.textContent = c.title || 'Untitled'; open.title = c.title;
    open.addEventListener('click', () => { listNote.textContent = ''; openConversation(c.id); });
    li.append(open, smallButton('rename', 'Rename', () => startRename(li, c)),
              smallButton('delete', 'Delete', () => deleteConversation(c.id)));
    return li;
  });
  listEl.replaceChildren(...items);
}
function smallButton(cls, text, onClick) {
  const b = document.createElement('button');
  b.type = 'button'; b.className = cls; b.textContent = cls === 'rename' ? '✎' : '✕';
  b.title = text; b.setAttribute('aria-label', text); b.addEventListener('click', onClick);
  return b;
}
const GONE = 'is no longer on the server (deleted or expired) and was removed from the list.';

// Asks the server for each listed conversation: its title, or a 404 that drops it from the list.
async function refreshList() {
  for (const c of readList()) {
    try {
      const conv = await call('GET', convPath(c.id));
      updateEntry(c.id, (e) => { e.title = titleOf(conv, e.title); });
    } catch (e) {
      if (e.status === 404) dropEntry(c.id, GONE);
      else return;  // a missing key or a server that is down: keep the list as it is
    }
  }
  renderList();
}
const titleOf = (conv, fallback) => (conv.metadata && conv.metadata.title) || fallback || 'Untitled';

// --- conversations on the server ---
async function createConversation(firstMessage) {
  const title = firstMessage.replace(/\s+/g, ' ').slice(0, TITLE_CHARS);
  const conv = await call('POST', '/v1/conversations', { metadata: { title } });
  writeList([{ id: conv.id, title: titleOf(conv, title), stats: {} }, ...readList()]);
  current = { id: conv.id, title: titleOf(conv, title), metadata: conv.metadata || {} };
  localStorage.setItem(listKey() + ':open', conv.id);
  renderList();
}
async function allItems(id) {  // the items in order, page by page
  const items = [];
  let after = '';
  for (;;) {
    const page = await call('GET', convPath(id) + '/items?order=asc&limit=100' +
                                   (after ? '&after=' + encodeURIComponent(after) : ''));
    items.push(...page.data);
    if (!page.has_more || !page.last_id) return items;
    after = page.last_id;
  }
}
async function openConversation(id) {
  stopTurn();
  try {
    const conv = await call('GET', convPath(id));
    const items = await allItems(id);
    current = { id, title: titleOf(conv), metadata: conv.metadata || {} };
    updateEntry(id, (e) => { e.title = current.title; });
    localStorage.setItem(listKey() + ':open', id);
    log.replaceChildren();
    const stats = (entry(id) || {}).stats || {};
    for (const item of items) renderItem(item, stats[item.id]);
    renderList();
    input.focus();
  } catch (e) {
    if (e.status === 404) dropEntry(id, GONE);
    else showError(e);
  }
}
function renderItem(item, figures) {
  if (item.type !== 'message') return;
  const text = (item.content || []).map((p) => p.text || '').join('');
  const el = bubble(item.role, text);
  el.dataset.itemId = item.id;
  if (item.role === 'assistant' && figures) showStats(el, figures);
}
function startRename(li, c) {
  const box = document.createElement('input');
  box.className = 'rename-box'; box.value = c.title; box.setAttribute('aria-label', 'New title');
  box.maxLength = 512;
  let done = false;
  const finish = (save) => {
    if (done) return;
    done = true;
    if (save && box.value.trim() && box.value.trim() !== c.title) renameConversation(c.id, box.value.trim());
    else renderList();
  };
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); finish(true); }
    if (e.key === 'Escape') finish(false);
  });
  box.addEventListener('blur', () => finish(true));
  li.replaceChildren(box);
  box.focus(); box.select();
}
// The title lives in the conversation's metadata; the other metadata keys stay as they are.
async function renameConversation(id, title) {
  try {
    const conv = await call('GET', convPath(id));
    const updated = await call('POST', convPath(id), { metadata: { ...(conv.metadata || {}), title } });
    updateEntry(id, (e) => { e.title = titleOf(updated, title); });
    if (current && current.id === id) { current.title = title; current.metadata = updated.metadata; }
  } catch (e) {
    if (e.status === 404) return dropEntry(id, GONE);
    showError(e);
  }
  renderList();
}
async function deleteConversation(id) {
  const c = entry(id);
  if (!confirm('Delete "' + (c ? c.title : id) + '" from the server?')) return;
  try { await call('DELETE', convPath(id)); }
  catch (e) { if (e.status !== 404) return showError(e); }
  listNote.textContent = '';
  dropEntry(id, null);
}

// --- a turn: one streamed POST /v1/responses that the server appends to the conversation ---
function turnBody(text) {
  const body = { conversation: current.id, input: text, stream: true, truncation: 'auto' };
  const system = $('system').value.trim(), temperature = $('temperature').value, cap = $('max-output').value;
  if (system) body.instructions = system;
  if (temperature !== '' && Number.isFinite(Number(temperature))) body.temperature = Number(temperature);
  if (Number(cap) >= 1) body.max_output_tokens = Math.floor(Number(cap));
  return body;
}
// Reads the Responses SSE events into the reply; returns the final response (completed or incomplete).
async function readTurn(r, reply, signal) {
  const reader = r.body.getReader(), decoder = new TextDecoder();
  let buf = '', final = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (signal.aborted) throw new DOMException('stopped', 'AbortError');  // Stop came after the last byte
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) final = onEvent(JSON.parse(data), reply) || final;
    }
  }
  if (!final) throw new Error('the reply ended before the server finished it');
  return final;
}
function onEvent(ev, reply) {
  switch (ev.type) {
    case 'response.output_item.added': reply.el.dataset.itemId = ev.item.id; return null;
    case 'response.output_text.delta':
      if (reply.firstDeltaMs === undefined) reply.firstDeltaMs = performance.now();
      reply.text += ev.delta; reply.el.firstChild.textContent = reply.text; log.scrollTop = log.scrollHeight;
      return null;
    case 'response.completed': case 'response.incomplete': reply.endMs = performance.now(); return ev.response;
    case 'error': throw Object.assign(new Error(ev.message || 'the server failed this reply'), { param: ev.param });
    case 'response.failed':
      throw new Error((ev.response && ev.response.error && ev.response.error.message) || 'the reply failed');
    default: return null;
  }
}
// Output tokens over the time from the first delta to the end; the prompt tokens the prefix cache served.
function figuresOf(final, reply) {
  const u = final.usage || {}, seconds = (reply.endMs - reply.firstDeltaMs) / 1000;
  return { tokensPerSecond: seconds > 0 ? u.output_tokens / seconds : null,
           cachedTokens: (u.input_tokens_details && u.input_tokens_details.cached_tokens) || 0,
           inputTokens: u.input_tokens || 0, outputTokens: u.output_tokens || 0 };
}
function showStats(el, f) {
  const s = document.createElement('span');
  s.className = 'stats';
  s.textContent = (f.tokensPerSecond === null ? 'n/a' : f.tokensPerSecond.toFixed(1)) + ' tokens/s · ' +
                  f.outputTokens + ' output tokens · ' + f.cachedTokens + ' of ' + f.inputTokens +
                  ' prompt tokens cached';
  el.dataset.tokensPerSecond = f.tokensPerSecond === null ? '' : String(f.tokensPerSecond);
  el.dataset.cachedTokens = String(f.cachedTokens);
  el.dataset.inputTokens = String(f.inputTokens);
  el.append(s);
}
function keepStats(id, itemId, f) {
  if (!itemId) return;
  updateEntry(id, (e) => {
    e.stats = e.stats || {};
    e.stats[itemId] = f;
    const keys = Object.keys(e.stats);
    for (const k of keys.slice(0, Math.max(0, keys.length - MAX_STATS))) delete e.stats[k];
    return true;  // the conversation just used goes to the top of the list
  });
}

async function chat(text) {
  const ctrl = new AbortController();
  const user = bubble('user', text), reply = { text: '', el: bubble('assistant', '') };
  setRunning(ctrl);
  let convId = current && current.id;
  try {
    if (!current) { await createConversation(text); convId = current.id; }
    const r = await api('POST', '/v1/responses', turnBody(text), ctrl.signal);
    const final = await readTurn(r, reply, ctrl.signal);
    const f = figuresOf(final, reply);
    showStats(reply.el, f);
    if (final.status === 'incomplete' && final.incomplete_details) {
      note(reply.el, final.incomplete_details.reason === 'max_output_tokens'
        ? 'cut at the output limit' : 'incomplete: ' + final.incomplete_details.reason);
    }
    keepStats(convId, reply.el.dataset.itemId, f);
    renderList();
    input.focus();
  } catch (e) {
    if (e.name === 'AbortError') {
      if (reply.el.isConnected) {  // the server keeps no turn it cancelled; reopening shows what it kept
        reply.el.classList.add('stopped'); note(reply.el, 'stopped');
        reply.el.title = 'Stopped turns are not kept in the conversation unless the reply had already ended';
      }
      input.focus();
    } else {
      reply.el.remove(); user.remove(); input.value = input.value || text;
      if (e.status === 404 && e.param === 'conversation' && convId) dropEntry(convId, GONE + ' Send again to start a new one.');
      else showError(e);
    }
  } finally {
    if (running === ctrl) setRunning(null);
  }
}

// --- the page ---
function bubble(kind, text) {
  const d = document.createElement('div'), t = document.createElement('span');
  d.className = 'msg ' + kind; t.className = 'text'; t.textContent = text; d.append(t);
  if (kind === 'error') d.setAttribute('role', 'alert');
  log.append(d); log.scrollTop = log.scrollHeight; return d;
}
function note(el, text) {
  const n = document.createElement('span'); n.className = 'note'; n.textContent = text; el.append(n);
}
function showError(e) { bubble('error', e.status === 401 ? pointAtKeyBox(!!keyBox.value) : String(e.message || e)); }
function pointAtKeyBox(refused) {
  keyBox.classList.add('attention'); keyBox.setAttribute('aria-invalid', 'true'); keyBox.focus();
  return refused ? 'The server refused this API key. Check the key in the "API key" box at the top, then send again.'
                 : 'This server needs an API key. Enter it in the "API key" box at the top, then send again.';
}
function setRunning(ctrl) { running = ctrl; sendButton.disabled = !!ctrl; stopButton.disabled = !ctrl; }
function stopTurn() { if (running) running.abort(); setRunning(null); }
function showNewChat() {
  stopTurn(); current = null; log.replaceChildren();
  localStorage.removeItem(listKey() + ':open'); renderList(); input.focus();
}

async function loadModel() {
  try {
    const r = await fetch('/v1/models', { headers: headers() });
    const j = await r.json();
    if (r.status === 401) { $('model').textContent = 'needs an API key'; pointAtKeyBox(!!keyBox.value); return false; }
    if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
    const context = j.data[0].max_model_len || 0;
    $('model').textContent = j.data[0].id;
    $('context').textContent = context ? '(' + context + '-token context)' : '';
    return true;
  } catch (e) { $('model').textContent = String(e.message || e); return false; }
}
// The key's list, refreshed from the server, and the conversation that was open last.
async function loadConversations() {
  current = null; log.replaceChildren(); renderList();
  if (!(await loadModel())) return;
  await refreshList();
  const last = localStorage.getItem(listKey() + ':open');
  if (last && entry(last)) await openConversation(last);
}

const SETTINGS = ['system', 'temperature', 'max-output'];
for (const id of SETTINGS) {
  $(id).value = localStorage.getItem('hichat-setting:' + id) || '';
  $(id).addEventListener('change', () => localStorage.setItem('hichat-setting:' + id, $(id).value));
}
keyBox.value = localStorage.getItem('hichat-key') || '';
keyBox.addEventListener('change', () => {
  localStorage.setItem('hichat-key', keyBox.value);
  keyBox.classList.remove('attention'); keyBox.removeAttribute('aria-invalid');
  stopTurn(); listNote.textContent = ''; loadConversations();
});
stopButton.addEventListener('click', () => { if (running) running.abort(); });
$('new-chat').addEventListener('click', showNewChat);
$('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = input.value.trim();
  if (!t || running) return;
  input.value = ''; chat(t);
});
input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('form').requestSubmit(); }
});
loadConversations();
</script>
</body>
</html>
)HTML";
    return kPage;
}

}  // namespace hichat::api
