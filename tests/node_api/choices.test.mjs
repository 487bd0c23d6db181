// n > 1 and logit_bias through the official OpenAI client on both endpoints: n choices with their
// indexes, streamed chunks that carry one choice each and reassemble into the non-streamed answer of the
// same seed, reproducible by seed (choice i is the single request of seed + i), greedy choices equal,
// usage summed over the choices with the prompt once; n and logit_bias errors name the field; a -100
// bias on the greedy token changes the answer, +100 forces a token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { BIN, makeModelDir, startServer, readSse, metric } from './server_harness.mjs';

let server, client, modelDir;
before(async () => {
  modelDir = makeModelDir();
  server = await startServer(modelDir);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => { assert.equal(await server.stop(), 0); });

const PROMPT = 'Once upon a time, in a quiet village by the sea, there lived an old fisherman';
const MESSAGES = [{ role: 'user', content: PROMPT }];

// Both endpoints through the SDK: request params -> { choices: [{ index, text, finish_reason }], usage }.
const endpoints = {
  chat: {
    async create(params) {
      const r = await client.chat.completions.create({ model: 'tiny', messages: MESSAGES, ...params });
      return { ...r, choices: r.choices.map((c) => ({ index: c.index, text: c.message.content, finish_reason: c.finish_reason })) };
    },
    stream: (params) => client.chat.completions.create({ model: 'tiny', messages: MESSAGES, ...params, stream: true }),
    delta: (c) => c.delta?.content ?? '',
  },
  completions: {
    async create(params) {
      const r = await client.completions.create({ model: 'tiny', prompt: PROMPT, ...params });
      return { ...r, choices: r.choices.map((c) => ({ index: c.index, text: c.text, finish_reason: c.finish_reason })) };
    },
    stream: (params) => client.completions.create({ model: 'tiny', prompt: PROMPT, ...params, stream: true }),
    delta: (c) => c.text ?? '',
  },
};

const SAMPLED = { temperature: 1, seed: 1234, max_tokens: 12, ignore_eos: true };

for (const [name, ep] of Object.entries(endpoints)) {
  test(`${name}: n: 4 gives 4 choices with indexes 0-3 and usage summed over them`, async () => {
    const one = await ep.create({ ...SAMPLED, n: 1 });
    const r = await ep.create({ ...SAMPLED, n: 4 });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
    for (const c of r.choices) assert.equal(c.finish_reason, 'length');
    assert.equal(r.usage.prompt_tokens, one.usage.prompt_tokens, 'the prompt counts once');
    assert.equal(r.usage.completion_tokens, 4 * 12);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 48);
    assert.ok(new Set(r.choices.map((c) => c.text)).size > 1, 'each choice samples with its own seed');
  });

  test(`${name}: reproducible by seed; choice i is the single request with seed + i`, async () => {
    const a = await ep.create({ ...SAMPLED, n: 4 });
    const b = await ep.create({ ...SAMPLED, n: 4 });
    assert.deepEqual(b.choices, a.choices);
    for (const i of [0, 3]) {
      const single = await ep.create({ ...SAMPLED, seed: SAMPLED.seed + i });
      assert.equal(single.choices[0].text, a.choices[i].text, `choice ${i}`);
    }
  });

  test(`${name}: streamed choices interleave by index and reassemble into the non-streamed answer`, async () => {
    const whole = await ep.create({ ...SAMPLED, n: 4 });
    const stream = await ep.stream({ ...SAMPLED, n: 4, stream_options: { include_usage: true } });
    const texts = ['', '', '', ''], finishes = [[], [], [], []];
    let usage = null, chunksAfterUsage = 0;
    for await (const chunk of stream) {
      if (usage) ++chunksAfterUsage;
      if (chunk.usage) {
        assert.deepEqual(chunk.choices, [], 'the usage chunk has no choices');
        usage = chunk.usage;
        continue;
      }
      assert.equal(chunk.choices.length, 1, 'one choice per chunk');
      const c = chunk.choices[0];
      texts[c.index] += ep.delta(c);
      if (c.finish_reason) finishes[c.index].push(c.finish_reason);
    }
    assert.deepEqual(texts, whole.choices.map((c) => c.text));
    assert.deepEqual(finishes, [['length'], ['length'], ['length'], ['length']], 'one finish chunk per choice');
    assert.ok(usage, 'include_usage: one final usage chunk');
    assert.equal(chunksAfterUsage, 0, 'the usage chunk is the last');
    assert.equal(usage.completion_tokens, 48);
    assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
  });

  test(`${name}: greedy n: 3 gives three identical choices equal to a single request's`, async () => {
    const params = { temperature: 0, max_tokens: 10, ignore_eos: true };
    const single = await ep.create(params);
    const r = await ep.create({ ...params, n: 3 });
    assert.equal(r.choices.length, 3);
    for (const c of r.choices) assert.equal(c.text, single.choices[0].text);
  });
}

test('streamed n: 2 on the wire: one [DONE], after every choice has finished', async () => {
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: PROMPT, n: 2, max_tokens: 5, stream: true, seed: 7, ignore_eos: true }),
  });
  assert.equal(res.status, 200);
  const { events, done } = await readSse(res);
  assert.ok(done);
  const finished = events.filter((e) => e.choices.length && e.choices[0].finish_reason).map((e) => e.choices[0].index);
  assert.deepEqual(finished.sort(), [0, 1]);
  const last = events[events.length - 1];
  assert.ok(last.choices[0].finish_reason, 'without include_usage the last event is a finish chunk');
  for (const e of events) assert.ok(e.id === events[0].id, 'one response id');
});

test('the children share the prompt: the prefix cache is hit by all but one', async () => {
  const prompt = 'A prompt that no other test sends: twelve quick zebras jog past the old mill in the rain.';
  const hitsBefore = await metric(server.url, 'hichat_prefix_cache_hit_tokens_total');
  const r = await client.completions.create({ model: 'tiny', prompt, n: 4, max_tokens: 2, temperature: 0 });
  const full = Math.floor((r.usage.prompt_tokens - 1) / 16) * 16;
  assert.ok(full >= 64);
  assert.equal(await metric(server.url, 'hichat_prefix_cache_hit_tokens_total') - hitsBefore, 3 * full,
    'three of the four children took the full blocks the first computed');
  assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0, 'computed for this request: not cached before it');
  const again = await client.completions.create({ model: 'tiny', prompt, max_tokens: 2, temperature: 0 });
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, full);
});

async function expect400(promise, param, pattern) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.param, param);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

test('n: 0 and n: 17 are 400s naming n', async () => {
  await expect400(endpoints.chat.create({ n: 0 }), 'n', /\[1, 16\]/);
  await expect400(endpoints.completions.create({ n: 17 }), 'n', /\[1, 16\]/);
  await expect400(endpoints.completions.create({ n: 17, stream: true }), 'n');
});

test('bad logit_bias values, keys, sizes and ids are 400s naming logit_bias', async () => {
  const tooMany = Object.fromEntries(Array.from({ length: 301 }, (_, i) => [String(i), 1]));
  for (const ep of Object.values(endpoints)) {
    await expect400(ep.create({ logit_bias: { 5: 101 } }), 'logit_bias', /-100, 100/);
    await expect400(ep.create({ logit_bias: { 5: -150 } }), 'logit_bias', /-100, 100/);
    await expect400(ep.create({ logit_bias: { abc: 1 } }), 'logit_bias', /token ids/);
    await expect400(ep.create({ logit_bias: tooMany }), 'logit_bias', /at most 300/);
    await expect400(ep.create({ logit_bias: { 320: 1 } }), 'logit_bias', /vocabulary/);
  }
  const ok = await endpoints.chat.create({ logit_bias: { 5: 1, 6: -1 }, max_tokens: 2 });
  assert.equal(ok.choices.length, 1);
});

function tokenIds(text) {
  const out = execFileSync(BIN, ['tokenize', '--model', modelDir], { input: JSON.stringify([text]), encoding: 'utf8' });
  return JSON.parse(out)[0];
}

// Every token's text (the vocabulary has 320 ids: bytes, merges and special tokens).
function vocabularyTexts() {
  const ids = Array.from({ length: 320 }, (_, i) => [i]);
  const out = execFileSync(BIN, ['tokenize', '--decode', '--model', modelDir], { input: JSON.stringify(ids), encoding: 'utf8' });
  return JSON.parse(out);
}

// The random model's greedy text is mostly bytes that are not UTF-8; a -100 bias on every token that is
// not printable ASCII (about 160 entries) makes it readable, so that its first token is known.
test('logit_bias -100 on the greedy token changes the answer; +100 forces a token', async () => {
  const texts = vocabularyTexts();
  const printable = (t) => t.length > 0 && [...t].every((ch) => ch >= ' ' && ch <= '~');
  const asciiOnly = {};
  texts.forEach((t, id) => { if (!printable(t)) asciiOnly[id] = -100; });
  assert.ok(Object.keys(asciiOnly).length < 300);
  for (const ep of Object.values(endpoints)) {
    const params = { temperature: 0, max_tokens: 6, ignore_eos: true, logit_bias: asciiOnly };
    const plain = await ep.create(params);
    const text = plain.choices[0].text;
    assert.ok(printable(text), `printable: ${JSON.stringify(text)}`);
    // Any token that can start the answer is banned: the greedy first token is one of them.
    const ban = { ...asciiOnly };
    texts.forEach((t, id) => { if (printable(t) && text.startsWith(t)) ban[id] = -100; });
    const banned = await ep.create({ ...params, logit_bias: ban });
    assert.notEqual(banned.choices[0].text, text);
    assert.ok(printable(banned.choices[0].text));
    assert.ok(!texts.some((t, id) => ban[id] && t.length > 0 && banned.choices[0].text.startsWith(t) && printable(t)),
      'no banned token starts the new answer');
    const [x] = tokenIds('x');
    const forced = await ep.create({ temperature: 1.5, max_tokens: 6, ignore_eos: true, seed: 3, n: 2,
      logit_bias: { [x]: 100 } });
    for (const c of forced.choices) assert.equal(c.text, 'xxxxxx');
  }
});
