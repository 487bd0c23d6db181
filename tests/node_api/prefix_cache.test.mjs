// The prefix cache through the API: a repeated prompt reports usage.prompt_tokens_details.cached_tokens,
// one key's cached prefix never serves another key (with a positive control), the Prometheus counters
// move, and --no-prefix-cache turns it off. Byte tokenizer: one token per byte of the prompt.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { makeModelDir, startServer } from './server_harness.mjs';

const modelDir = makeModelDir();
let server, uncached;
before(async () => {
  server = await startServer(modelDir, ['--api-key', 'sk-cache-a', '--api-key', 'sk-cache-b']);
  uncached = await startServer(modelDir, ['--no-prefix-cache']);
});
after(async () => {
  assert.equal(await server.stop(), 0);
  assert.equal(await uncached.stop(), 0);
});

const PROMPT = 'The quick brown fox jumps over the lazy dog, then rests in the shade of an old oak tree.';

async function complete(srv, key, prompt = PROMPT) {
  const res = await fetch(`${srv.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ prompt, max_tokens: 4, temperature: 0 }),
  });
  assert.equal(res.status, 200);
  return res.json();
}

async function metric(srv, key, name) {
  const text = await (await fetch(`${srv.url}/metrics`, { headers: key ? { Authorization: `Bearer ${key}` } : {} })).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  assert.ok(line, `${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

test('a repeated prompt is served from the cache; another key never hits it', async () => {
  const a1 = await complete(server, 'sk-cache-a');
  const full = Math.floor((a1.usage.prompt_tokens - 1) / 16) * 16;
  assert.ok(full >= 64, 'the prompt spans several blocks');
  assert.equal(a1.usage.prompt_tokens_details.cached_tokens, 0, 'first time: nothing cached');
  const a2 = await complete(server, 'sk-cache-a');
  assert.equal(a2.usage.prompt_tokens_details.cached_tokens, full, 'same key, same prompt: hit');
  assert.equal(a2.choices[0].text, a1.choices[0].text);
  const b1 = await complete(server, 'sk-cache-b');
  assert.equal(b1.usage.prompt_tokens_details.cached_tokens, 0, "key b never gets key a's blocks");
  const b2 = await complete(server, 'sk-cache-b');
  assert.equal(b2.usage.prompt_tokens_details.cached_tokens, full, 'positive control: b hits its own');
  assert.equal(b1.choices[0].text, a1.choices[0].text);

  assert.ok(await metric(server, 'sk-cache-a', 'hichat_prefix_cache_hit_tokens_total') >= 2 * full);
  assert.ok(await metric(server, 'sk-cache-a', 'hichat_prefix_cache_queried_tokens_total') >= 4 * a1.usage.prompt_tokens);
  assert.ok(await metric(server, 'sk-cache-a', 'hichat_kv_blocks_cached') > 0);
});

test('a shared head hits for a different tail (chat)', async () => {
  const system = { role: 'system', content: 'You are a careful assistant who answers in one short sentence.' };
  const ask = async (q) => {
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-cache-a' },
      body: JSON.stringify({ messages: [system, { role: 'user', content: q }], max_tokens: 3, temperature: 0 }),
    });
    assert.equal(res.status, 200);
    return (await res.json()).usage;
  };
  await ask('What is the capital of France?');
  const u = await ask('Name a prime number larger than ten.');
  assert.ok(u.prompt_tokens_details.cached_tokens >= 48, `system prompt blocks reused (${u.prompt_tokens_details.cached_tokens})`);
  assert.ok(u.prompt_tokens_details.cached_tokens < u.prompt_tokens);
});

test('--no-prefix-cache: a repeated prompt is computed again', async () => {
  await complete(uncached, null);
  const again = await complete(uncached, null);
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(await metric(uncached, null, 'hichat_prefix_cache_hit_tokens_total'), 0);
});
