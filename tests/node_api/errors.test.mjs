// Bad input gets a 4xx JSON error naming the field, and the server keeps serving.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { makeModelDir, startServer, readSse } from './server_harness.mjs';

let server, client;

before(async () => {
  server = await startServer(makeModelDir(), ['--body-timeout-s', '1', '--header-timeout-s', '2', '--max-body-mb', '8']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
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
  ['n of 0', '/v1/chat/completions', chat({ n: 0 }), 400, 'n'],
  ['n beyond the limit', '/v1/completions', JSON.stringify({ prompt: 'x', n: 17 }), 400, 'n'],
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

test('/health reports the load', async () => {
  const res = await fetch(`${server.url}/health`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.status, 'ok');
  for (const k of ['requests_waiting', 'requests_running', 'waiting_prompt_tokens', 'kv_blocks_free', 'kv_blocks_total',
    'predicted_wait_ms']) assert.equal(typeof body.load[k], 'number', k);
  assert.ok(body.load.kv_blocks_total > 0);
});

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

// OpenAI fields HiChat does not implement are refused by name, through the official client.
const unsupportedChat = [
  // This model's chat template has no tool-call format (tools.test.mjs serves ones that have).
  ['tools', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }] }],
  ['modalities', { modalities: ['text', 'audio'] }],
  ['reasoning_effort', { reasoning_effort: 'low' }],
  ['messages[0].content[0]', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }],
  ['messages[0].name', { messages: [{ role: 'user', content: 'hi', name: 'bob' }] }],
];

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the request succeeded');
}

for (const [param, extra] of unsupportedChat) {
  test(`chat ${JSON.stringify(extra).slice(0, 60)} -> 400 naming ${param}`, async () => {
    const e = await rejection(client.chat.completions.create({
      model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...extra,
    }));
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.param, param);
    assert.equal(e.code, 'unsupported_field');
    assert.match(e.message, /not support/);
    await assertStillServing();
  });
}

for (const [param, extra] of [['best_of', { best_of: 2 }],
  ['suffix', { suffix: 'end' }]]) {
  test(`completions ${JSON.stringify(extra)} -> 400 naming ${param}`, async () => {
    const e = await rejection(client.completions.create({ model: 'tiny', prompt: 'hi', max_tokens: 2, ...extra }));
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.param, param);
    assert.equal(e.code, 'unsupported_field');
  });
}

test('off values of unsupported fields and no-op fields are accepted', async () => {
  const r = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, logprobs: false, tools: [],
    tool_choice: 'none', response_format: { type: 'text' }, n: 1, store: false, user: 'u', metadata: { k: 'v' },
  });
  assert.equal(r.choices.length, 1);
  const c = await client.completions.create({ model: 'tiny', prompt: 'hi', max_tokens: 2, echo: false, best_of: 1 });
  assert.equal(c.choices.length, 1);
});

test('a field outside the schema is ignored and named in one log line', async () => {
  const before = server.stderr().length;
  const r = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, hichat_test_unknown_field: 1,
  });
  assert.equal(r.choices.length, 1);
  // The line is written before the answer, but the pipe from the server may deliver it later.
  const logged = () => server.stderr().slice(before).split('\n').filter((l) => l.includes('hichat_test_unknown_field'));
  for (let i = 0; i < 200 && logged().length === 0; ++i) await new Promise((r) => setTimeout(r, 50));
  const lines = logged();
  assert.equal(lines.length, 1, server.stderr().slice(before));
  assert.match(lines[0], /ignored request fields outside the OpenAI schema/);
});

// Messages quote big numbers as written and one range for top_p.
test('max_tokens 2^63 is quoted as written', async () => {
  const r = await post('/v1/chat/completions', chat({ max_tokens: 1 }).replace('"max_tokens":1', '"max_tokens":9223372036854775808'));
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'max_tokens');
  assert.match(r.json.error.message, /must be an integer in \[1, 2147483647\], got 9223372036854775808$/);
});

test('seed takes the whole unsigned 64-bit range and says its range beyond it', async () => {
  const ok = await post('/v1/chat/completions', chat({ max_tokens: 2, seed: 1 }).replace('"seed":1', '"seed":18446744073709551615'));
  assert.equal(ok.status, 200);
  const r = await post('/v1/chat/completions', chat({ seed: 1 }).replace('"seed":1', '"seed":18446744073709551616'));
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'seed');
  assert.match(r.json.error.message, /seed must be an integer in \[-9223372036854775808, 18446744073709551615\]/);
});

test('top_p 0 and 1.5 quote the same range', async () => {
  for (const top_p of [0, 1.5]) {
    const r = await post('/v1/chat/completions', chat({ top_p }));
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /^top_p must be in \(0, 1\], got /);
  }
});

// JSON nesting is capped before the body is parsed.
test('100,000 nested arrays -> 400 json_too_deep, and the server stays up', async () => {
  const r = await post('/v1/chat/completions', '['.repeat(100000) + ']'.repeat(100000));
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'json_too_deep');
  await assertStillServing();
  const atLimit = chat({ max_tokens: 2 }).replace(/}$/, `,"deep":${'['.repeat(63)}${']'.repeat(63)}}`);
  const ok = await post('/v1/chat/completions', atLimit);
  assert.equal(ok.status, 200, JSON.stringify(ok.json));
});

// Whether a request reaches the deadline depends on the machine's speed, so this test does not require
// one to: it requires that every outcome is a completion with an OpenAI finish_reason, or the
// request_timeout error (non-streamed: a 504; streamed: an error event, then [DONE]). The error path
// itself is covered without timing in tests/api/generation_sink_test.cpp.
test('a request past --request-timeout-s ends in a request_timeout error, never finish_reason "deadline"', async (t) => {
  const slow = await startServer(makeModelDir(), ['--request-timeout-s', '1', '--max-num-seqs', '16']);
  try {
    const c = new OpenAI({ baseURL: `${slow.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const body = { model: 'tiny', messages: [{ role: 'user', content: 'Tell me a long story.' }], ignore_eos: true };
    const finishes = ['stop', 'length'];
    const nonStreamed = async () => {
      try {
        const r = await c.chat.completions.create(body);
        assert.ok(finishes.includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
        return 'finished';
      } catch (e) {
        assert.equal(e.status, 504, String(e));
        assert.equal(e.code, 'request_timeout');
        return 'timeout';
      }
    };
    const streamed = async () => {
      const res = await fetch(`${slow.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
      });
      assert.equal(res.status, 200);
      const { events, done } = await readSse(res);
      assert.ok(done, 'the stream ends with [DONE]');
      for (const ev of events.slice(0, -1)) assert.ok(!ev.error, 'an error only as the last event');
      const last = events[events.length - 1];
      if (last.error) {
        assert.equal(last.error.code, 'request_timeout');
        return 'timeout';
      }
      assert.ok(finishes.includes(last.choices[0].finish_reason), JSON.stringify(last));
      return 'finished';
    };
    const outcomes = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? streamed() : nonStreamed())));
    t.diagnostic(`timeouts: ${outcomes.filter((o) => o === 'timeout').length} of ${outcomes.length}`);
  } finally {
    assert.equal(await slow.stop(), 0);
  }
});
