// Bad input gets a 4xx JSON error naming the field, and the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { makeModelDir, startServer } from './server_harness.mjs';

let server;

before(async () => {
  server = await startServer(makeModelDir(), ['--body-timeout-s', '1', '--header-timeout-s', '2', '--max-body-mb', '8']);
});
after(async () => { assert.equal(await server.stop(), 0); });

async function post(path, body, headers = {}) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body,
  });
  return { status: res.status, json: await res.json().catch(() => null), headers: res.headers };
}

async function assertStillServing() {
  const res = await fetch(`${server.url}/health`);
  assert.equal(res.status, 200);
}

const chat = (extra) => JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], ...extra });

const cases = [
  ['malformed JSON', '/v1/chat/completions', '{"messages": [', 400, ''],
  ['a JSON array body', '/v1/chat/completions', '[1,2]', 400, ''],
  ['temperature of the wrong type', '/v1/chat/completions', chat({ temperature: 'hot' }), 400, 'temperature'],
  ['missing messages', '/v1/chat/completions', JSON.stringify({ model: 'tiny' }), 400, 'messages'],
  ['messages not an array', '/v1/chat/completions', JSON.stringify({ messages: 'hi' }), 400, 'messages'],
  ['a message without role', '/v1/chat/completions', JSON.stringify({ messages: [{ content: 'x' }] }), 400, 'messages[0].role'],
  ['unknown model', '/v1/chat/completions', chat({ model: 'gpt-9' }), 404, 'model'],
  ['max_tokens 0', '/v1/chat/completions', chat({ max_tokens: 0 }), 400, 'max_tokens'],
  ['max_tokens negative', '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: -5 }), 400, 'max_tokens'],
  ['max_tokens beyond the context', '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: 100000 }), 400, 'max_tokens'],
  // The error names the field the client sent (it named max_completion_tokens for either; found by bench/soak.sh).
  ['chat max_tokens beyond the context', '/v1/chat/completions', chat({ max_tokens: 100000 }), 400, 'max_tokens'],
  ['chat max_completion_tokens beyond the context', '/v1/chat/completions', chat({ max_completion_tokens: 100000 }), 400,
   'max_completion_tokens'],
  ['temperature NaN', '/v1/chat/completions', '{"messages":[{"role":"user","content":"hi"}],"temperature":NaN}', 400, ''],
  ['temperature negative', '/v1/chat/completions', chat({ temperature: -1 }), 400, 'temperature'],
  ['top_p out of range', '/v1/chat/completions', chat({ top_p: 1.5 }), 400, 'top_p'],
  ['n of 2', '/v1/chat/completions', chat({ n: 2 }), 400, 'n'],
  ['a prompt longer than the context', '/v1/completions', JSON.stringify({ prompt: 'word '.repeat(3000) }), 400, 'prompt'],
  ['stop of the wrong type', '/v1/completions', JSON.stringify({ prompt: 'x', stop: 5 }), 400, 'stop'],
];

for (const [name, path, body, status, param] of cases) {
  test(`${name} -> ${status}`, async () => {
    const r = await post(path, body);
    assert.equal(r.status, status);
    assert.ok(r.json && r.json.error, 'JSON error body');
    assert.equal(typeof r.json.error.message, 'string');
    assert.ok(r.json.error.message.length > 0);
    assert.equal(typeof r.json.error.type, 'string');
    assert.ok('param' in r.json.error);
    if (param) assert.equal(r.json.error.param, param);
    await assertStillServing();
  });
}

test('invalid UTF-8 in a message -> 400 naming the field', async () => {
  const head = Buffer.from('{"messages":[{"role":"user","content":"ok"},{"role":"user","content":"bad \xff\xfe here"}]}', 'latin1');
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: head });
  assert.equal(res.status, 400);
  const j = await res.json();
  assert.equal(j.error.param, 'messages[1].content');
  await assertStillServing();
});

test('a 20 MB body -> 413', async () => {
  const body = JSON.stringify({ prompt: 'x'.repeat(20 * 1024 * 1024) });
  const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })
    .catch((e) => ({ status: 'reset', error: e }));
  // The server answers 413 and closes; a client still sending may see the reset instead.
  if (res.status !== 'reset') {
    assert.equal(res.status, 413);
    const j = await res.json();
    assert.ok(j.error.message);
  }
  await assertStillServing();
});

test('a client that sends headers and stalls is cut off; others are served meanwhile', async () => {
  const sock = net.connect(server.port, '127.0.0.1');
  await new Promise((r) => sock.on('connect', r));
  sock.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pro');
  const closed = new Promise((r) => sock.on('close', r));
  let reply = '';
  sock.on('data', (d) => { reply += d.toString(); });
  const t0 = Date.now();
  const ok = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'hello', max_tokens: 4 }) });
  assert.equal(ok.status, 200);
  await closed;
  const waited = Date.now() - t0;
  assert.ok(waited < 6000, `cut off after ${waited} ms`);
  assert.match(reply, /^HTTP\/1\.1 408/);
});

test('special-token strings typed by a user are plain text', async () => {
  // "</s>" is the tokenizer's EOS string: typed in content it must not end the prompt's turn early,
  // so the prompt token count is that of the literal characters.
  const plain = await post('/v1/chat/completions', chat({ messages: [{ role: 'user', content: 'a</s>b' }], max_tokens: 1 }));
  const other = await post('/v1/chat/completions', chat({ messages: [{ role: 'user', content: 'a<X>b' }], max_tokens: 1 }));
  assert.equal(plain.status, 200);
  assert.equal(plain.json.usage.prompt_tokens, other.json.usage.prompt_tokens + 1, '"</s>" is 4 bytes, "<X>" is 3');
});
