// Logprobs through the API with the official openai SDK and fetch: chat's logprobs.content entries and
// the completions' legacy object; the chosen token's logprob equals the log-softmax of `hichat score`'s
// logits (CPU) within 1e-4; the top lists are sorted; each token equals its bytes where those are valid
// UTF-8; streamed entries equal the non-streamed ones (to 1e-4); bad values are 400s naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { BIN, makeModelDir, startServer } from './server_harness.mjs';

const modelDir = makeModelDir();
let server, client;
before(async () => {
  server = await startServer(modelDir, ['--device', 'cpu']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none' });
});
after(async () => { assert.equal(await server.stop(), 0); });

// The log-softmax of every row of `hichat score` over `ids` (float64).
function scoreAllRows(ids) {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-score-')), 'logits.f32');
  execFileSync(BIN, ['score', '--model', modelDir, '--ids', ids.join(','), '--out', out, '--device', 'cpu',
    '--threads', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const all = new Float32Array(fs.readFileSync(out).buffer.slice(0));
  const vocab = all.length / ids.length;
  const rows = [];
  for (let r = 0; r < ids.length; ++r) {
    const row = Array.from(all.subarray(r * vocab, (r + 1) * vocab));
    const max = Math.max(...row);
    const lse = max + Math.log(row.reduce((s, v) => s + Math.exp(v - max), 0));
    rows.push(row.map((v) => v - lse));
  }
  return rows;
}

// The last of those rows, with its ids sorted by log-probability (ties: the lower id first).
function scoreLastRow(ids) {
  const lp = scoreAllRows(ids).at(-1);
  const order = lp.map((v, i) => [v, i]).sort((x, y) => y[0] - x[0] || x[1] - y[1]);
  return { lp, order };
}

async function post(pathname, body) {
  const res = await fetch(`${server.url}${pathname}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

const PROMPT_IDS = [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 32, 84, 104, 101];

test('completions: token_logprobs and top_logprobs equal the log-softmax of hichat score', async () => {
  const ids = [...PROMPT_IDS];
  for (let step = 0; step < 4; ++step) {
    const { status, json } = await post('/v1/completions', { prompt: ids, max_tokens: 1, temperature: 0, logprobs: 5 });
    assert.equal(status, 200, JSON.stringify(json));
    const lp = json.choices[0].logprobs;
    assert.equal(lp.tokens.length, 1);
    assert.deepEqual(lp.text_offset, [0]);
    const ref = scoreLastRow(ids);
    const best = ref.order[0];
    assert.ok(Math.abs(lp.token_logprobs[0] - best[0]) <= 1e-4, `step ${step}: ${lp.token_logprobs[0]} vs ${best[0]}`);
    const top = Object.values(lp.top_logprobs[0]);
    assert.ok(top.length >= 1 && top.length <= 6);
    for (let k = 1; k < top.length; ++k) assert.ok(top[k - 1] >= top[k], 'sorted');
    assert.ok(Math.abs(top[0] - best[0]) <= 1e-4);
    ids.push(best[1]);  // greedy: the next prompt continues with the argmax
  }
});

test('completions echo: the prompt first, its tokens with the log-softmax of hichat score', async () => {
  const ids = [...PROMPT_IDS];
  const { status, json } = await post('/v1/completions', { prompt: ids, max_tokens: 3, temperature: 0, logprobs: 2, echo: true });
  assert.equal(status, 200, JSON.stringify(json));
  const c = json.choices[0];
  const promptText = Buffer.from(ids).toString('latin1');  // byte tokenizer: ids below 128 are ASCII bytes
  assert.ok(c.text.startsWith(promptText), JSON.stringify(c.text));
  const lp = c.logprobs;
  assert.equal(lp.tokens.length, ids.length + 3);
  assert.equal(lp.token_logprobs[0], null, 'nothing precedes the first token');
  assert.equal(lp.top_logprobs[0], null);
  assert.equal(lp.tokens.slice(0, ids.length).join(''), promptText);
  const rows = scoreAllRows(ids);  // causal: the prompt's rows do not depend on what follows
  for (let p = 1; p < ids.length; ++p) {
    const want = rows[p - 1][ids[p]];
    assert.ok(Math.abs(lp.token_logprobs[p] - want) <= 1e-4, `prompt token ${p}: ${lp.token_logprobs[p]} vs ${want}`);
    const top = Object.values(lp.top_logprobs[p]);
    assert.ok(top.length >= 2 && top.length <= 3, JSON.stringify(lp.top_logprobs[p]));
  }
  for (let i = 0; i < lp.text_offset.length; ++i) {
    if (i > 0) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1], 'offsets grow');
  }
  assert.equal(lp.text_offset[ids.length], promptText.length, 'the completion starts after the echoed prompt');
  assert.equal(json.usage.prompt_tokens, ids.length);
  assert.equal(json.usage.completion_tokens, 3);
});

test('completions echo with max_tokens 0: the prompt alone; streamed the same; max_tokens 0 needs echo', async () => {
  const body = { prompt: 'Hello there', max_tokens: 0, echo: true, logprobs: 0 };
  const { status, json } = await post('/v1/completions', body);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.choices[0].text, 'Hello there');
  assert.equal(json.choices[0].finish_reason, 'length');
  assert.equal(json.usage.completion_tokens, 0);
  assert.equal(json.choices[0].logprobs.tokens.length, json.usage.prompt_tokens);
  for (const v of json.choices[0].logprobs.token_logprobs.slice(1)) assert.ok(v <= 0);

  const whole = await client.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 5, temperature: 0, echo: true, n: 2 });
  for (const c of whole.choices) assert.ok(c.text.startsWith('Once'));
  const stream = await client.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 5, temperature: 0, echo: true, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);

  const bad = await post('/v1/completions', { prompt: 'Hi', max_tokens: 0 });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'max_tokens');
});

test('chat: logprobs.content entries, sorted top lists, tokens equal their bytes', async () => {
  const res = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 12, temperature: 0,
    logprobs: true, top_logprobs: 5,
  });
  const content = res.choices[0].logprobs.content;
  assert.equal(content.length, res.usage.completion_tokens);
  let valid = 0;
  for (const e of content) {
    assert.equal(e.top_logprobs.length, 5);
    for (let k = 1; k < 5; ++k) assert.ok(e.top_logprobs[k - 1].logprob >= e.top_logprobs[k].logprob, 'sorted');
    assert.equal(e.logprob, e.top_logprobs[0].logprob, 'greedy: the chosen token is the most likely');
    assert.deepEqual(e.bytes, e.top_logprobs[0].bytes);
    assert.ok(e.logprob <= 0);
    const bytes = Buffer.from(e.bytes);
    if (!bytes.toString('utf8').includes('\ufffd')) {
      assert.equal(e.token, bytes.toString('utf8'), 'the token is its bytes');
      ++valid;
    }
  }
  assert.ok(valid > 0, 'some tokens are valid UTF-8 on their own');
  // The raw bytes, decoded with U+FFFD for what is not UTF-8 (as the server's text is), make up the text.
  assert.equal(new TextDecoder().decode(Buffer.concat(content.map((e) => Buffer.from(e.bytes)))),
    res.choices[0].message.content, 'the bytes make up the text');
});

test('chat: streamed logprobs entries equal the non-streamed ones; sampled rows too', async () => {
  const body = { model: 'tiny', messages: [{ role: 'user', content: 'Count.' }], max_tokens: 10, temperature: 1,
    seed: 5, logprobs: true, top_logprobs: 3 };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const streamed = [];
  for await (const chunk of stream) {
    const lp = chunk.choices[0]?.logprobs;
    if (lp) streamed.push(...lp.content);
  }
  // The same tokens; the second run's prompt comes from the prefix cache, so its logits may differ in
  // the last float bits (suffix-only prefill).
  const want = whole.choices[0].logprobs.content;
  assert.deepEqual(streamed.map((e) => e.bytes), want.map((e) => e.bytes));
  streamed.forEach((e, i) => assert.ok(Math.abs(e.logprob - want[i].logprob) <= 1e-4, `${e.logprob} vs ${want[i].logprob}`));
  for (const e of streamed) {
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
  }
});

test('no logprobs asked: null', async () => {
  const res = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
  assert.equal(res.choices[0].logprobs, null);
});

test('bad logprobs fields are 400s naming the field', async () => {
  const chat = (extra) => post('/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1, ...extra });
  for (const [extra, param] of [
    [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    [{ logprobs: true, top_logprobs: -1 }, 'top_logprobs'],
    [{ top_logprobs: 2 }, 'top_logprobs'],
    [{ logprobs: 'yes' }, 'logprobs'],
  ]) {
    const { status, json } = await chat(extra);
    assert.equal(status, 400, JSON.stringify(extra));
    assert.equal(json.error.param, param, JSON.stringify(json));
  }
  for (const logprobs of [6, -1, 'x']) {
    const { status, json } = await post('/v1/completions', { prompt: 'Hi', max_tokens: 1, logprobs });
    assert.equal(status, 400);
    assert.equal(json.error.param, 'logprobs');
  }
});
