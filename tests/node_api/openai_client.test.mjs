// The official OpenAI client against `hichat serve`: chat and completions, streamed and not, models,
// greedy equality with `hichat generate`, 64 concurrent streams, a client that disconnects; CORS for a
// browser origin; and the access log: one line for every request, refused ones included.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { makeModelDir, startServer, generateCli, readSse, metric } from './server_harness.mjs';

let server, client, modelDir;

before(async () => {
  modelDir = makeModelDir();
  server = await startServer(modelDir, ['--max-num-seqs', '64', '--max-num-batched-tokens', '512',
    '--allowed-origin', 'http://app.example']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
});

test('models.list names the model folder', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tiny']);
});

test('models.retrieve returns the served model and a 404 model_not_found for another id', async () => {
  const model = await client.models.retrieve('tiny');
  assert.equal(model.id, 'tiny');
  assert.equal(model.object, 'model');
  const listed = (await client.models.list()).data[0];
  assert.equal(model.owned_by, listed.owned_by);
  await assert.rejects(client.models.retrieve('meta-llama/other'), (err) => {
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.code, 'model_not_found');
    assert.equal(err.param, 'model');
    assert.match(err.message, /meta-llama\/other/);
    return true;
  });
});

test('CORS: a preflight and a request from the allowed origin; another origin gets no grant', async () => {
  const pre = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'OPTIONS',
    headers: { Origin: 'http://app.example', 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization, content-type, x-stainless-lang' },
  });
  assert.equal(pre.status, 204);
  assert.equal(pre.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
  assert.match(pre.headers.get('access-control-allow-headers'), /x-stainless-lang/);
  assert.match(pre.headers.get('vary'), /Origin/);

  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { Origin: 'http://app.example', 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream: true }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.match(res.headers.get('access-control-expose-headers'), /X-Request-Id/);
  assert.ok((await readSse(res)).done);

  const refused = await fetch(`${server.url}/v1/models`, {
    method: 'OPTIONS', headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' },
  });
  assert.equal(refused.status, 403);
  assert.equal(refused.headers.get('access-control-allow-origin'), null);
  assert.equal((await refused.json()).error.code, 'origin_not_allowed');
});

// Sends raw bytes and resolves with everything the server sent once it closes the connection.
function rawExchange(port, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let received = '';
    socket.on('data', (d) => { received += d.toString('latin1'); });
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
  });
}

test('the access log has exactly one line per request, refused and GET requests included', async () => {
  const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-log-')), 'access.log');
  const logged = await startServer(modelDir, ['--access-log', logPath, '--header-timeout-s', '1', '--max-body-mb', '1']);
  const url = logged.url;
  const c = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const expected = [];  // [method, path, status] in request order
  const call = async (method, p, status, init = {}) => {
    const res = await fetch(`${url}${p}`, { method, ...init });
    assert.equal(res.status, status, `${method} ${p}`);
    await res.arrayBuffer();
    expected.push([method, p, status]);
  };
  await call('GET', '/health', 200);
  await call('GET', '/', 200);
  await call('GET', '/metrics', 200);
  await c.models.list();
  expected.push(['GET', '/v1/models', 200]);
  await call('GET', '/nope', 404);
  await call('DELETE', '/health', 405);
  await call('POST', '/v1/chat/completions', 400, { body: '{"messages": 5}' });
  const tooLarge = await rawExchange(logged.port, 'POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n');
  assert.match(tooLarge, /^HTTP\/1\.1 413 /);
  expected.push(['POST', '/v1/completions', 413]);
  const chat = await c.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
  expected.push(['POST', '/v1/chat/completions', 200]);
  const stream = await c.completions.create({ model: 'tiny', prompt: 'hello', max_tokens: 2, stream: true });
  for await (const _ of stream);  // eslint-disable-line no-unused-vars
  expected.push(['POST', '/v1/completions', 200]);
  const big = await rawExchange(logged.port, `GET /health HTTP/1.1\r\nHost: t\r\nX-Big: ${'h'.repeat(20000)}\r\n\r\n`);
  assert.match(big, /^HTTP\/1\.1 431 /);
  expected.push(['GET', '/health', 431]);
  const stalled = await rawExchange(logged.port, 'GET /v1/models HTTP/1.1\r\nHost');  // the server gives up: 408
  assert.match(stalled, /^HTTP\/1\.1 408 /);
  expected.push(['GET', '/v1/models', 408]);
  const silent = await rawExchange(logged.port, '');  // no request at all: closed, not logged
  assert.equal(silent, '');
  assert.equal(await logged.stop(), 0);

  const lines = fs.readFileSync(logPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.method, l.path, l.status]), expected);
  for (const l of lines) assert.ok(l.bytes_sent > 0 && l.duration_ms >= 0 && l.remote.startsWith('127.0.0.1:'), JSON.stringify(l));
  const gen = lines[8];
  assert.equal(gen.request_id, chat.id);
  assert.equal(gen.prompt_tokens, chat.usage.prompt_tokens);
  assert.equal(gen.completion_tokens, chat.usage.completion_tokens);
  assert.equal(gen.finish_reason, chat.choices[0].finish_reason);
  assert.match(lines[9].request_id, /^cmpl-/);
  assert.equal(lines[9].completion_tokens, 2);
  assert.equal(lines[0].request_id, '');
});

test('chat completion, non-streamed and streamed, agree', async () => {
  const messages = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell me a story.' }];
  const full = await client.chat.completions.create({ model: 'tiny', messages, temperature: 0, max_tokens: 24 });
  assert.equal(full.object, 'chat.completion');
  assert.equal(full.choices[0].message.role, 'assistant');
  assert.ok(full.usage.prompt_tokens > 10);
  assert.ok(full.usage.completion_tokens >= 1 && full.usage.completion_tokens <= 24);
  assert.ok(['stop', 'length'].includes(full.choices[0].finish_reason));

  const stream = await client.chat.completions.create({
    model: 'tiny', messages, temperature: 0, max_tokens: 24, stream: true, stream_options: { include_usage: true },
  });
  let text = '', contentChunks = 0, finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.content !== undefined) { text += c.delta.content; contentChunks++; }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, full.choices[0].message.content);
  assert.equal(finish, full.choices[0].finish_reason);
  const { prompt_tokens_details: cachedFull, ...restFull } = full.usage;
  const { prompt_tokens_details: cachedStream, ...restStream } = usage;
  assert.deepEqual(restStream, restFull);
  assert.equal(typeof cachedFull.cached_tokens, 'number');
  // The same prompt again: every full 16-token block before its last token comes from the prefix cache.
  assert.equal(cachedStream.cached_tokens, Math.floor((full.usage.prompt_tokens - 1) / 16) * 16);
  assert.equal(contentChunks, full.usage.completion_tokens, 'one token per chunk');
});

test('text completion equals hichat generate (greedy)', async () => {
  const prompt = 'Once upon a time';
  const res = await client.completions.create({ model: 'tiny', prompt, temperature: 0, max_tokens: 30 });
  assert.equal(res.object, 'text_completion');
  const cli = generateCli(modelDir, prompt, 30);
  assert.equal(res.choices[0].text + '\n', cli);

  const stream = await client.completions.create({ model: 'tiny', prompt, temperature: 0, max_tokens: 30, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, res.choices[0].text);
});

test('seeded sampling is reproducible', async () => {
  const req = { model: 'tiny', prompt: 'abc', temperature: 0.9, top_p: 0.95, seed: 42, max_tokens: 20 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  assert.equal(a.choices[0].text, b.choices[0].text);
});

test('64 concurrent streams each equal their request run alone', async () => {
  const prompts = Array.from({ length: 64 }, (_, i) => `Request number ${i}: ${'xyz'.repeat(i % 7)}`);
  const alone = [];
  for (const p of prompts) {
    const r = await client.completions.create({ model: 'tiny', prompt: p, temperature: 0, max_tokens: 16, ignore_eos: true });
    alone.push(r);
  }
  const results = await Promise.all(prompts.map(async (p) => {
    const stream = await client.completions.create({
      model: 'tiny', prompt: p, temperature: 0, max_tokens: 16, ignore_eos: true, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '', chunks = 0, usage = null;
    for await (const c of stream) {
      if (c.usage) usage = c.usage;
      if (c.choices[0] && !c.choices[0].finish_reason) { text += c.choices[0].text; chunks++; }
    }
    return { text, chunks, usage };
  }));
  results.forEach((r, i) => {
    assert.equal(r.text, alone[i].choices[0].text, `request ${i}`);
    assert.equal(r.usage.completion_tokens, 16, `request ${i}`);
    assert.equal(r.chunks, 16, `request ${i}: one chunk per token`);
  });
});

test('a client that disconnects mid-stream is cancelled and its KV freed', async () => {
  const other = client.completions.create({ model: 'tiny', prompt: 'keep going', temperature: 0, max_tokens: 200, ignore_eos: true });
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: controller.signal,
    body: JSON.stringify({ model: 'tiny', prompt: 'a very long answer', max_tokens: 1800, ignore_eos: true, stream: true }),
  });
  let seen = 0;
  try {
    await readSse(res, () => { seen++; if (seen === 5) { controller.abort(); return false; } return true; });
  } catch (e) { /* aborted */ }
  assert.equal(seen, 5);
  const done = await other;
  assert.equal(done.usage.completion_tokens, 200, 'the other request is undisturbed');
  let used = -1;
  for (let i = 0; i < 100; i++) {
    used = await metric(server.url, 'hichat_kv_blocks_used');
    if (used === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(used, 0, 'KV blocks freed after the disconnect');
  assert.equal(await metric(server.url, 'hichat_num_requests_running'), 0);
});
