// The official OpenAI client against `hichat serve`: chat and completions, streamed and not, models,
// greedy equality with `hichat generate`, 64 concurrent streams, and a client that disconnects.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { makeModelDir, startServer, generateCli, readSse, metric } from './server_harness.mjs';

let server, client, modelDir;

before(async () => {
  modelDir = makeModelDir();
  server = await startServer(modelDir, ['--max-num-seqs', '64', '--max-num-batched-tokens', '512']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
});

test('models.list names the model folder', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tiny']);
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
  assert.deepEqual(usage, full.usage);
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
