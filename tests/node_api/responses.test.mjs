// The Responses and Conversations APIs through the official OpenAI client against `hichat serve` on the
// default model, stored in a SQLite file: create / retrieve / delete / input items, streamed and not;
// conversations and their items; a 10-turn chain by previous_response_id that survives a SIGKILL of the
// server; store: false; another API key; bad input named by field; a corrupt database refused at start-up.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { BIN, DEFAULT_MODEL, startServer } from './server_harness.mjs';

const KEY_A = 'sk-sessions-a', KEY_B = 'sk-sessions-b';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-sessions-'));
const dbPath = path.join(dir, 'sessions.db');
const serveArgs = ['--api-key', KEY_A, '--api-key', KEY_B, '--session-db', dbPath];
let server, a, b;

function clients() {
  a = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY_A, maxRetries: 0 });
  b = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY_B, maxRetries: 0 });
}

before(async () => {
  server = await startServer(DEFAULT_MODEL, serveArgs);
  clients();
});
after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});

const outputText = (r) => r.output.flatMap((item) => item.content.map((c) => c.text)).join('');

async function rejectsWith(promise, status, param, code) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, String(err));
    if (param !== undefined) assert.equal(err.param, param, String(err));
    if (code !== undefined) assert.equal(err.code, code, String(err));
    return true;
  });
}

test('responses.create / retrieve / inputItems.list / delete', async () => {
  const r = await a.responses.create({ input: 'Hello there', max_output_tokens: 8, temperature: 0,
    instructions: 'Be brief.', metadata: { topic: 'greeting' } });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.ok(['completed', 'incomplete'].includes(r.status));
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.output[0].content[0].type, 'output_text');
  assert.ok(outputText(r).length > 0);
  assert.equal(r.output_text, outputText(r), 'the SDK sees the output_text');
  assert.ok(r.usage.input_tokens > 0);
  assert.equal(r.usage.input_tokens_details.cached_tokens >= 0, true);
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.instructions, 'Be brief.');
  assert.deepEqual(r.metadata, { topic: 'greeting' });
  assert.equal(r.store, true);

  const got = await a.responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.equal(outputText(got), outputText(r));
  const items = await a.responses.inputItems.list(r.id);
  assert.equal(items.data.length, 1);
  assert.equal(items.data[0].role, 'user');
  assert.equal(items.data[0].content[0].text, 'Hello there');

  const deleted = await a.responses.delete(r.id);
  assert.deepEqual([deleted?.id ?? r.id], [r.id]);
  await rejectsWith(a.responses.retrieve(r.id), 404);
});

test('streamed responses: the event types in order, sequence numbers 0, 1, 2, ...; stored like the others', async () => {
  const stream = await a.responses.create({ input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }],
    max_output_tokens: 6, stream: true });
  const events = [];
  for await (const ev of stream) events.push(ev);
  events.forEach((ev, i) => assert.equal(ev.sequence_number, i));
  const types = events.map((e) => e.type);
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added']);
  const last = types.at(-1);
  assert.ok(last === 'response.completed' || last === 'response.incomplete', last);
  assert.deepEqual(types.slice(-4, -1), ['response.output_text.done', 'response.content_part.done',
    'response.output_item.done']);
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  const done = events.find((e) => e.type === 'response.output_text.done');
  assert.equal(deltas, done.text);
  const final = events.at(-1).response;
  assert.equal(outputText(final), done.text);
  const got = await a.responses.retrieve(final.id);
  assert.equal(outputText(got), done.text);
});

test('store: false is not retrievable, and another key sees none of our responses', async () => {
  const unstored = await a.responses.create({ input: 'x', max_output_tokens: 2, store: false });
  assert.equal(unstored.store, false);
  await rejectsWith(a.responses.retrieve(unstored.id), 404);
  await rejectsWith(a.responses.create({ input: 'y', max_output_tokens: 2, previous_response_id: unstored.id }), 404,
    'previous_response_id');

  const mine = await a.responses.create({ input: 'mine', max_output_tokens: 2 });
  await rejectsWith(b.responses.retrieve(mine.id), 404);
  await rejectsWith(b.responses.inputItems.list(mine.id), 404);
  await rejectsWith(b.responses.delete(mine.id), 404);
  await rejectsWith(b.responses.create({ input: 'z', max_output_tokens: 2, previous_response_id: mine.id }), 404,
    'previous_response_id');
  assert.equal((await a.responses.retrieve(mine.id)).id, mine.id, 'still there for its owner');
});

test('bad input is a 4xx naming the field, and the server keeps serving', async () => {
  await rejectsWith(a.responses.create({ input: 'x', previous_response_id: 'not an id' }), 400, 'previous_response_id');
  await rejectsWith(a.responses.create({ input: 'x', previous_response_id: 'resp_doesnotexist' }), 404,
    'previous_response_id');
  const conv = await a.conversations.create({});
  const prev = await a.responses.create({ input: 'x', max_output_tokens: 2 });
  await rejectsWith(a.responses.create({ input: 'x', previous_response_id: prev.id, conversation: conv.id }), 400,
    'conversation');
  await rejectsWith(a.responses.create({ input: 'x', conversation: 'conv_unknown' }), 404, 'conversation');
  const long = 'the quick brown fox jumps over the lazy dog '.repeat(200);
  await rejectsWith(a.responses.create({ input: long, max_output_tokens: 4 }), 400, 'input');
  await rejectsWith(a.responses.create({ input: 'x', tools: [{ type: 'function', name: 'f', parameters: {} }] }), 400,
    'tools', 'unsupported_field');
  await rejectsWith(a.responses.create({ input: 'x', reasoning: { effort: 'high' } }), 400, 'reasoning',
    'unsupported_field');
  await rejectsWith(a.responses.create({ input: 'x', background: true, stream: true }), 400, 'background',
    'unsupported_field');
  await rejectsWith(a.responses.create({ input: 'x', background: true, store: false }), 400, 'background');
  await rejectsWith(a.responses.create({ input: 'x', include: ['reasoning.encrypted_content'] }), 400, 'include',
    'unsupported_field');
  await rejectsWith(a.responses.create({ input: 'x', text: { format: { type: 'json_object' } } }), 400, 'text.format',
    'unsupported_field');
  await rejectsWith(a.responses.create({ input: [{ type: 'function_call_output', call_id: 'c', output: 'o' }] }), 400,
    'input[0].type', 'unsupported_field');
  await rejectsWith(a.responses.create({ input: 'x', max_output_tokens: 0 }), 400, 'max_output_tokens');
  await rejectsWith(a.responses.create({ input: 'x', temperature: 'hot' }), 400, 'temperature');
  await rejectsWith(a.responses.create({ input: [{ role: 'robot', content: 'x' }] }), 400, 'input[0].role');
  await rejectsWith(a.conversations.create({ metadata: { k: 'v'.repeat(513) } }), 400, 'metadata.k');
  const ok = await a.responses.create({ input: 'still there?', max_output_tokens: 2 });
  assert.match(ok.id, /^resp_/);
});

test('truncation "auto" drops the oldest turns of a chain longer than the context', async () => {
  const filler = 'the quick brown fox jumps over the lazy dog '.repeat(60);  // about 500 tokens a turn
  let prev = await a.responses.create({ input: filler, max_output_tokens: 4 });
  const next = await a.responses.create({ input: filler, max_output_tokens: 4, previous_response_id: prev.id,
    truncation: 'auto' });
  assert.ok(next.usage.input_tokens < prev.usage.input_tokens + 400, 'the first turn was dropped');
  await rejectsWith(a.responses.create({ input: filler, max_output_tokens: 4, previous_response_id: prev.id }), 400,
    'input');
});

test('conversations: create, retrieve, update, items create / list / retrieve / delete, delete', async () => {
  const conv = await a.conversations.create({ metadata: { project: 'x' },
    items: [{ type: 'message', role: 'user', content: 'My name is Ada.' }] });
  assert.match(conv.id, /^conv_/);
  assert.equal(conv.object, 'conversation');
  assert.deepEqual(conv.metadata, { project: 'x' });
  assert.deepEqual((await a.conversations.retrieve(conv.id)).metadata, { project: 'x' });
  const updated = await a.conversations.update(conv.id, { metadata: { project: 'y' } });
  assert.deepEqual(updated.metadata, { project: 'y' });

  const added = await a.conversations.items.create(conv.id, {
    items: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello Ada.' }] }] });
  assert.equal(added.data.length, 1);
  const listed = await a.conversations.items.list(conv.id, { order: 'asc' });
  assert.deepEqual(listed.data.map((i) => i.role), ['user', 'assistant']);
  const item = await a.conversations.items.retrieve(added.data[0].id, { conversation_id: conv.id });
  assert.equal(item.content[0].text, 'Hello Ada.');

  // A response in the conversation sees its items and appends its input and output.
  const r = await a.responses.create({ input: 'What is my name?', conversation: conv.id, max_output_tokens: 4 });
  assert.deepEqual(r.conversation, { id: conv.id });
  const after1 = await a.conversations.items.list(conv.id, { order: 'asc' });
  assert.deepEqual(after1.data.map((i) => i.role), ['user', 'assistant', 'user', 'assistant']);
  assert.equal(after1.data[3].content[0].text, outputText(r));
  const r2 = await a.responses.create({ input: 'And again?', conversation: { id: conv.id }, max_output_tokens: 4 });
  assert.ok(r2.usage.input_tokens > r.usage.input_tokens + r.usage.output_tokens, 'the history is in the prompt');
  const page = await a.conversations.items.list(conv.id, { limit: 2 });
  assert.equal(page.data.length, 2);
  assert.equal(page.data[0].id, r2.output[0].id, 'newest first by default');

  await rejectsWith(b.conversations.retrieve(conv.id), 404);
  await rejectsWith(b.conversations.items.list(conv.id), 404);
  await rejectsWith(b.responses.create({ input: 'x', conversation: conv.id }), 404, 'conversation');

  const afterDelete = await a.conversations.items.delete(added.data[0].id, { conversation_id: conv.id });
  assert.equal(afterDelete.id, conv.id);
  await rejectsWith(a.conversations.items.retrieve(added.data[0].id, { conversation_id: conv.id }), 404);
  const gone = await a.conversations.delete(conv.id);
  assert.equal(gone.deleted, true);
  await rejectsWith(a.conversations.retrieve(conv.id), 404);
  await rejectsWith(a.conversations.retrieve('conv_neverexisted'), 404);
});

test('a 10-turn chain by previous_response_id continues across a SIGKILL of the server', async () => {
  const turns = [];
  let prev;
  for (let i = 1; i <= 10; ++i) {
    if (i === 6) {
      const exited = new Promise((r) => server.proc.on('exit', (code, signal) => r(signal)));
      server.proc.kill('SIGKILL');
      assert.equal(await exited, 'SIGKILL');
      server = await startServer(DEFAULT_MODEL, serveArgs);
      clients();
      const before = await a.responses.retrieve(prev.id);  // stored before the kill
      assert.equal(outputText(before), outputText(turns[4]));
    }
    const r = await a.responses.create({ input: `Turn ${i}: tell me more.`, max_output_tokens: 8, temperature: 0,
      ...(prev ? { previous_response_id: prev.id } : {}) });
    assert.equal(r.previous_response_id, prev ? prev.id : null);
    if (prev) {
      assert.ok(r.usage.input_tokens > prev.usage.input_tokens + prev.usage.output_tokens,
        `turn ${i}: ${r.usage.input_tokens} input tokens after ${prev.usage.input_tokens} + ${prev.usage.output_tokens}`);
    }
    turns.push(r);
    prev = r;
  }
  const items = await a.responses.inputItems.list(turns[9].id);
  assert.equal(items.data[0].content[0].text, 'Turn 10: tell me more.');
  assert.equal(outputText(await a.responses.retrieve(turns[2].id)), outputText(turns[2]));
});

test('start-up with a corrupt session database exits non-zero with one line naming the file', async () => {
  const bad = path.join(dir, 'garbage.db');
  fs.writeFileSync(bad, 'this is not a database\n'.repeat(300));
  const proc = spawn(BIN, ['serve', '--model', DEFAULT_MODEL, '--port', '0', '--session-db', bad],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise((r) => proc.on('exit', (c) => r(c)));
  assert.notEqual(code, 0);
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, stderr);
  assert.ok(lines[0].includes(bad), stderr);
  assert.match(lines[0], /not a usable SQLite database/);
  assert.doesNotMatch(stderr, /listening/);
});
