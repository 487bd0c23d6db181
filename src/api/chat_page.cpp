#include "api/chat_page.h"

namespace hichat::api {

std::string_view chat_page_html() {
    static constexpr std::string_view kPage = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>HiChat</title>
<style>
  :root { --bg:#f6f7f9; --fg:#1d2330; --muted:#6b7280; --me:#dbeafe; --bot:#ffffff; --line:#e5e7eb; }
  * { box-sizing: border-box; }
  body { margin:0; font:16px/1.5 system-ui, sans-serif; background:var(--bg); color:var(--fg);
         display:flex; flex-direction:column; height:100vh; }
  header { padding:10px 16px; border-bottom:1px solid var(--line); display:flex; gap:12px; align-items:center;
           background:#fff; }
  header h1 { font-size:18px; margin:0; }
  header .model { color:var(--muted); font-size:14px; flex:1; }
  header input { width:220px; padding:4px 8px; border:1px solid var(--line); border-radius:6px; }
  #log { flex:1; overflow-y:auto; padding:16px; display:flex; flex-direction:column; gap:10px; }
  .msg { max-width:75%; padding:8px 12px; border-radius:10px; white-space:pre-wrap; word-wrap:break-word;
         border:1px solid var(--line); }
  .user { align-self:flex-end; background:var(--me); }
  .assistant { align-self:flex-start; background:var(--bot); }
  .error { align-self:center; color:#b91c1c; font-size:14px; }
  form { display:flex; gap:8px; padding:12px 16px; border-top:1px solid var(--line); background:#fff; }
  textarea { flex:1; resize:none; height:52px; padding:8px; border:1px solid var(--line); border-radius:8px;
             font:inherit; }
  button { padding:0 18px; border:0; border-radius:8px; background:#2563eb; color:#fff; font:inherit; cursor:pointer; }
  button:disabled { background:#93c5fd; cursor:default; }
</style>
</head>
<body>
<header>
  <h1>HiChat</h1><span class="model" id="model">connecting...</span>
  <input id="key" type="password" placeholder="API key (if required)" autocomplete="off">
</header>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Type a message and press Enter"></textarea>
  <button id="send" type="submit">Send</button>
</form>
<script>
const log = document.getElementById('log'), input = document.getElementById('input');
const send = document.getElementById('send'), keyBox = document.getElementById('key');
const history = [];
keyBox.value = localStorage.getItem('hichat-key') || '';
keyBox.addEventListener('change', () => { localStorage.setItem('hichat-key', keyBox.value); loadModel(); });
function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (keyBox.value) h['Authorization'] = 'Bearer ' + keyBox.value;
  return h;
}
function bubble(role, text) {
  const d = document.createElement('div');
  d.className = 'msg ' + role; d.textContent = text; log.appendChild(d);
  log.scrollTop = log.scrollHeight; return d;
}
async function loadModel() {
  try {
    const r = await fetch('/v1/models', { headers: headers() });
    const j = await r.json();
    document.getElementById('model').textContent = r.ok ? j.data[0].id : (j.error && j.error.message);
  } catch (e) { document.getElementById('model').textContent = String(e); }
}
async function chat(text) {
  history.push({ role: 'user', content: text });
  bubble('user', text);
  const out = bubble('assistant', '');
  send.disabled = true;
  let reply = '';
  try {
    const r = await fetch('/v1/chat/completions', { method: 'POST', headers: headers(),
      body: JSON.stringify({ messages: history, stream: true, max_tokens: 512 }) });
    if (!r.ok) { const j = await r.json(); throw new Error(j.error ? j.error.message : r.statusText); }
    const reader = r.body.getReader(), decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const line = buf.slice(0, cut).trim(); buf = buf.slice(cut + 2);
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const j = JSON.parse(line.slice(6));
        const delta = j.choices && j.choices[0] && j.choices[0].delta;
        if (delta && delta.content) { reply += delta.content; out.textContent = reply; log.scrollTop = log.scrollHeight; }
      }
    }
    history.push({ role: 'assistant', content: reply });
  } catch (e) { out.remove(); bubble('error', String(e.message || e)); history.pop(); }
  send.disabled = false; input.focus();
}
document.getElementById('form').addEventListener('submit', e => {
  e.preventDefault(); const t = input.value.trim(); if (!t || send.disabled) return; input.value = ''; chat(t);
});
input.addEventListener('keydown', e => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); document.getElementById('form').requestSubmit(); }
});
loadModel();
</script>
</body>
</html>
)HTML";
    return kPage;
}

}  // namespace hichat::api
