#include "api/chat_page.h"

namespace hichat::api {

// The page sizes each reply from what fits in the context (GET /v1/models max_model_len), drops the
// oldest turns when the history does not fit, and has Stop (aborts the stream; the server cancels on
// disconnect) and New chat buttons.
std::string_view chat_page_html() {
    static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>HiChat</title>
<style>
  :root { --bg:#f6f7f9; --fg:#1d2330; --muted:#6b7280; --me:#dbeafe; --bot:#ffffff; --line:#e5e7eb; --bad:#b91c1c; }
  * { box-sizing: border-box; }
  body { margin:0; font:16px/1.5 system-ui, sans-serif; background:var(--bg); color:var(--fg);
         display:flex; flex-direction:column; height:100vh; }
  header { padding:10px 16px; border-bottom:1px solid var(--line); display:flex; flex-wrap:wrap; gap:12px;
           align-items:center; background:#fff; }
  header h1 { font-size:18px; margin:0; }
  header .status { color:var(--muted); font-size:14px; flex:1; }
  header label { font-size:14px; color:var(--muted); display:flex; gap:6px; align-items:center; }
  header input { padding:4px 8px; border:1px solid var(--line); border-radius:6px; font:inherit; color:var(--fg); }
  #key { width:200px; }
  #max-reply { width:80px; }
  #key.attention { border-color:var(--bad); outline:2px solid var(--bad); }
  #log { flex:1; overflow-y:auto; padding:16px; display:flex; flex-direction:column; gap:10px; }
  .msg { max-width:75%; padding:8px 12px; border-radius:10px; white-space:pre-wrap; word-wrap:break-word;
         border:1px solid var(--line); }
  .user { align-self:flex-end; background:var(--me); }
  .assistant { align-self:flex-start; background:var(--bot); }
  .dropped { opacity:.5; }
  .note { display:block; color:var(--muted); font-size:13px; font-style:italic; }
  .notice, .error { align-self:center; font-size:14px; border:0; max-width:90%; }
  .notice { color:var(--muted); }
  .error { color:var(--bad); }
  form { display:flex; gap:8px; padding:12px 16px; border-top:1px solid var(--line); background:#fff; }
  textarea { flex:1; resize:none; height:52px; padding:8px; border:1px solid var(--line); border-radius:8px;
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
  <label for="max-reply">Reply cap
    <input id="max-reply" type="number" min="1" step="1" placeholder="none"
           title="empty: a reply may use all the room left in the context"> tokens</label>
  <label for="key">API key
    <input id="key" type="password" placeholder="if the server needs one" autocomplete="off"></label>
  <button id="new-chat" type="button" class="secondary">New chat</button>
</header>
<div id="log" role="log" aria-live="polite"></div>
<form id="form">
  <textarea id="input" aria-label="Message" placeholder="Type a message and press Enter"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" class="secondary" disabled>Stop</button>
</form>
<script>
const $ = (id) => document.getElementById(id);
const log = $('log'), input = $('input'), sendButton = $('send'), stopButton = $('stop');
const keyBox = $('key'), maxBox = $('max-reply');
const OVERHEAD_CHARS = 8;  // per message: the chat template's role markers, counted as characters
let history = [];          // {role, content, el}: the turns the next request sends
let context = 0;           // the model's context in tokens, from GET /v1/models
let tokensPerChar = 0.5;   // learned from usage.prompt_tokens of each reply
let running = null;        // the AbortController of the request in flight

// --- sizing: estimate the prompt from its characters, keep room for a reply, drop the oldest turns ---
const chars = (turns) => turns.reduce((n, m) => n + m.content.length + OVERHEAD_CHARS, 0);
const estimate = (turns) => Math.ceil(chars(turns) * tokensPerChar);
const replyCap = () => (Number(maxBox.value) >= 1 ? Math.floor(Number(maxBox.value)) : Infinity);
const margin = () => Math.max(16, Math.floor(context / 20));  // for the error in the estimate
// The least room left for a reply: a quarter of the context, at least 128 tokens, at most the cap.
const reserve = () => Math.min(replyCap(), Math.max(128, Math.floor(context / 4)));

function dropOldestTurn(turns) {  // a user message and its reply; a leading system message stays
  const first = turns.findIndex((m) => m.role !== 'system');
  const next = turns.findIndex((m, i) => i > first && m.role === 'user');
  if (first < 0 || next < 0) return false;
  for (const m of turns.splice(first, next - first)) m.el.classList.add('dropped');
  return true;
}
function fitToContext(turns) {
  let dropped = false;
  while (context && estimate(turns) + reserve() + margin() > context && dropOldestTurn(turns)) dropped = true;
  return dropped;
}
// max_tokens is the cap when it surely fits; otherwise left out, and the server uses all the room left.
function requestBody(turns, allowCap) {
  const body = { messages: turns.map(({ role, content }) => ({ role, content })), stream: true,
                 stream_options: { include_usage: true } };
  const cap = replyCap();
  if (allowCap && cap !== Infinity && (!context || estimate(turns) + cap + margin() <= context)) body.max_tokens = cap;
  return body;
}
const promptTooLong = (r, e) => r.status === 400 && e.param === 'messages' && /context/.test(e.message || '');
const capTooLong = (r, e) => r.status === 400 && /^max_(completion_)?tokens$/.test(e.param || '');

// Posts the turns; when the server says they do not fit, drops turns or the cap and asks again.
async function post(turns, signal) {
  if (!context) await loadModel();
  let dropped = fitToContext(turns), allowCap = true;
  for (;;) {
    const body = requestBody(turns, allowCap);
    const r = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(), signal,
                                                    body: JSON.stringify(body) });
    if (r.ok) return { r, dropped, sent: body.messages };
    const e = await r.json().then((j) => j.error || {}, () => ({}));
    if (promptTooLong(r, e) && dropOldestTurn(turns)) { dropped = true; continue; }
    if (capTooLong(r, e) && allowCap) { allowCap = false; continue; }
    const text = promptTooLong(r, e) ? 'This message is too long for the model: ' + e.message : e.message;
    throw Object.assign(new Error(text || r.statusText), { status: r.status });
  }
}

// --- streaming: SSE chunks into the reply bubble ---
async function readReply(r, reply, sent, signal) {
  const reader = r.body.getReader(), decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (signal.aborted) throw new DOMException('stopped', 'AbortError');  // Stop came after the last byte
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const line = buf.slice(0, cut).trim(); buf = buf.slice(cut + 2);
      if (line.startsWith('data: ') && line !== 'data: [DONE]') onChunk(JSON.parse(line.slice(6)), reply, sent);
    }
  }
}
function onChunk(j, reply, sent) {
  if (j.error) throw new Error(j.error.message);
  const delta = j.choices && j.choices[0] && j.choices[0].delta;
  if (delta && delta.content) {
    reply.content += delta.content; reply.el.firstChild.textContent = reply.content; log.scrollTop = log.scrollHeight;
  }
  if (j.usage && j.usage.prompt_tokens > 0) tokensPerChar = j.usage.prompt_tokens / chars(sent);
}

// --- the page ---
function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (keyBox.value) h['Authorization'] = 'Bearer ' + keyBox.value;
  return h;
}
function bubble(kind, text, before = null) {
  const d = document.createElement('div'), t = document.createElement('span');
  d.className = 'msg ' + kind; t.className = 'text'; t.textContent = text; d.append(t);
  if (kind === 'error') d.setAttribute('role', 'alert');
  log.insertBefore(d, before); log.scrollTop = log.scrollHeight; return d;
}
function note(el, text) {
  const n = document.createElement('span'); n.className = 'note'; n.textContent = text; el.append(n);
}
function pointAtKeyBox(refused) {
  keyBox.classList.add('attention'); keyBox.setAttribute('aria-invalid', 'true'); keyBox.focus();
  return refused ? 'The server refused this API key. Check the key in the "API key" box at the top, then send again.'
                 : 'This server needs an API key. Enter it in the "API key" box at the top, then send again.';
}
function setRunning(ctrl) { running = ctrl; sendButton.disabled = !!ctrl; stopButton.disabled = !ctrl; }

async function loadModel() {
  try {
    const r = await fetch('/v1/models', { headers: headers() });
    const j = await r.json();
    if (r.status === 401) { $('model').textContent = 'needs an API key'; pointAtKeyBox(!!keyBox.value); return; }
    if (!r.ok) throw new Error(j.error ? j.error.message : r.statusText);
    context = j.data[0].max_model_len || 0;
    $('model').textContent = j.data[0].id;
    $('context').textContent = context ? '(' + context + '-token context)' : '';
  } catch (e) { $('model').textContent = String(e.message || e); }
}
async function chat(text) {
  const turns = history, kept = history.slice(), ctrl = new AbortController();
  const user = { role: 'user', content: text, el: bubble('user', text) };
  const reply = { role: 'assistant', content: '', el: bubble('assistant', '') };
  turns.push(user);
  setRunning(ctrl);
  try {
    const { r, dropped, sent } = await post(turns, ctrl.signal);
    if (dropped) {
      bubble('notice', 'Earlier turns were dropped to fit the model\'s ' + context + '-token context; ' +
                       'they are no longer sent.', user.el).setAttribute('role', 'status');
    }
    await readReply(r, reply, sent, ctrl.signal);
    turns.push(reply);
    input.focus();
  } catch (e) {
    if (e.name === 'AbortError') {
      reply.el.classList.add('stopped'); note(reply.el, 'stopped'); turns.push(reply); input.focus();
    } else {
      reply.el.remove(); user.el.remove(); input.value = input.value || text;
      turns.splice(0, turns.length, ...kept);  // a failed turn drops nothing
      for (const m of kept) m.el.classList.remove('dropped');
      bubble('error', e.status === 401 ? pointAtKeyBox(!!keyBox.value) : String(e.message || e));
    }
  } finally {
    if (running === ctrl) setRunning(null);
  }
}
function newChat() {
  if (running) running.abort();
  setRunning(null); history = []; log.replaceChildren(); input.focus();
}

keyBox.value = localStorage.getItem('hichat-key') || '';
keyBox.addEventListener('change', () => {
  localStorage.setItem('hichat-key', keyBox.value);
  keyBox.classList.remove('attention'); keyBox.removeAttribute('aria-invalid'); loadModel();
});
stopButton.addEventListener('click', () => { if (running) running.abort(); });
$('new-chat').addEventListener('click', newChat);
$('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const t = input.value.trim();
  if (!t || running) return;
  input.value = ''; chat(t);
});
input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('form').requestSubmit(); }
});
loadModel();
</script>
</body>
</html>
)HTML";
    return kPage;
}

}  // namespace hichat::api
