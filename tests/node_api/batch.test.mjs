// The Files and Batch APIs through the official OpenAI client against `hichat serve` on the tiny model:
// files.create / retrieve / content / delete, batches.create / retrieve / list / cancel; every line
// answered exactly once in input order; a server killed (SIGKILL) mid-batch and restarted on the same
// SQLite file and files folder finishes the batch without running a finished line again; bad input: a
// malformed line in the error file while the rest run, an unknown endpoint (400), an oversized file
// (413), unknown ids (404); files and batches of another API key are absent.
//
// Nothing here waits for time to pass: progress is read from batches.retrieve's request_counts, and a
// batch that finishes before the kill could be made is retried with twice the lines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { makeModelDir, startServer, metric } from './server_harness.mjs';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-batch-'));
const dbPath = path.join(dir, 'sessions.db');
const filesDir = path.join(dir, 'files');
// One line at a time, so that a batch is mid-way for long enough to be caught.
const serveArgs = ['--session-db', dbPath, '--files-dir', filesDir, '--batch-concurrency', '1', '--max-file-mb', '1',
  '--max-num-batched-tokens', '512'];
const FINAL = new Set(['completed', 'failed', 'cancelled', 'expired']);
let modelDir, server, client;

function connect() {
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}

before(async () => {
  modelDir = makeModelDir();
  server = await startServer(modelDir, serveArgs);
  connect();
});
after(async () => {
  assert.equal(await server.stop(), 0, 'graceful exit on SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
});

const chatLine = (customId, body = {}) => JSON.stringify({ custom_id: customId, method: 'POST', url: '/v1/chat/completions',
  body: { model: 'tiny', messages: [{ role: 'user', content: `Say ${customId}.` }], max_tokens: 4, temperature: 0, ...body } });

async function upload(lines, name = 'input.jsonl') {
  return client.files.create({ file: await toFile(Buffer.from(lines.join('\n') + '\n'), name), purpose: 'batch' });
}

async function createBatch(fileId, extra = {}) {
  return client.batches.create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h', ...extra });
}

// Polls until the batch is in a final state (or `until` holds); returns the batch.
async function poll(id, until = (b) => FINAL.has(b.status)) {
  for (;;) {
    const b = await client.batches.retrieve(id);
    if (until(b)) return b;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function jsonl(fileId) {
  const text = await (await client.files.content(fileId)).text();
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
}

async function rejectsWith(promise, status, check = () => {}) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, String(err));
    check(err);
    return true;
  });
}

test('files.create, batches.create / retrieve / list, files.content: every line answered once, in order', async () => {
  const ids = Array.from({ length: 12 }, (_, i) => `req-${i}`);
  const lines = ids.map((id) => chatLine(id));
  const file = await upload(lines, 'twelve.jsonl');
  assert.match(file.id, /^file-/);
  assert.equal(file.object, 'file');
  assert.equal(file.purpose, 'batch');
  assert.equal(file.filename, 'twelve.jsonl');
  assert.equal(file.bytes, Buffer.byteLength(lines.join('\n') + '\n'));
  assert.deepEqual(await client.files.retrieve(file.id), file);
  assert.equal(await (await client.files.content(file.id)).text(), lines.join('\n') + '\n');

  const created = await createBatch(file.id, { metadata: { suite: 'batch' } });
  assert.match(created.id, /^batch_/);
  assert.equal(created.object, 'batch');
  assert.equal(created.endpoint, '/v1/chat/completions');
  assert.equal(created.completion_window, '24h');
  assert.equal(created.input_file_id, file.id);
  assert.deepEqual(created.metadata, { suite: 'batch' });
  assert.ok(['validating', 'in_progress', 'finalizing', 'completed'].includes(created.status), created.status);
  assert.equal(created.expires_at, created.created_at + 24 * 3600);

  const done = await poll(created.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.request_counts, { total: 12, completed: 12, failed: 0 });
  assert.equal(done.error_file_id, null);
  assert.ok(done.in_progress_at >= done.created_at && done.completed_at >= done.in_progress_at);
  const out = await jsonl(done.output_file_id);
  assert.deepEqual(out.map((l) => l.custom_id), ids, 'each custom_id once, in input order');
  for (const l of out) {
    assert.match(l.id, /^batch_req_/);
    assert.equal(l.error, null);
    assert.equal(l.response.status_code, 200);
    assert.equal(l.response.request_id, l.response.body.id);
    assert.equal(l.response.body.object, 'chat.completion');
    assert.ok(l.response.body.usage.completion_tokens <= 4);
  }
  // The same request asked interactively (greedy) gets the same answer: one path for both.
  const direct = await client.chat.completions.create(JSON.parse(lines[3]).body);
  assert.equal(out[3].response.body.choices[0].message.content, direct.choices[0].message.content);
  const outputFile = await client.files.retrieve(done.output_file_id);
  assert.equal(outputFile.purpose, 'batch_output');

  const second = await createBatch(file.id);
  const listed = await client.batches.list({ limit: 1 });
  assert.equal(listed.data.length, 1);
  assert.equal(listed.data[0].id, second.id, 'newest first');
  assert.equal(listed.has_more, true);
  const all = [];
  for await (const b of client.batches.list({ limit: 1 })) all.push(b.id);  // pages by `after`
  assert.ok(all.indexOf(second.id) < all.indexOf(created.id), all.join());
  await poll(second.id);
});

test('bad lines go to the error file and the rest run; an answer that is an error is there too', async () => {
  const lines = [
    chatLine('a'),
    '{"custom_id": "broken", this is not json',
    chatLine('b'),
    chatLine('a'),                                                    // duplicate custom_id
    JSON.stringify({ custom_id: 'c', method: 'POST', url: '/v1/completions', body: { prompt: 'x' } }),  // other url
    chatLine('d', { max_tokens: 0 }),                                 // the endpoint answers 400
  ];
  const done = await poll((await createBatch((await upload(lines)).id)).id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.request_counts, { total: 6, completed: 2, failed: 4 });
  assert.deepEqual((await jsonl(done.output_file_id)).map((l) => l.custom_id), ['a', 'b']);
  const errors = await jsonl(done.error_file_id);
  assert.deepEqual(errors.map((l) => l.custom_id), [null, 'a', 'c', 'd']);
  assert.equal(errors[0].error.code, 'invalid_json');
  assert.match(errors[0].error.message, /line 2/);
  assert.equal(errors[0].response, null);
  assert.equal(errors[1].error.code, 'duplicate_custom_id');
  assert.equal(errors[2].error.code, 'invalid_url');
  assert.equal(errors[3].error, null);
  assert.equal(errors[3].response.status_code, 400);
  assert.equal(errors[3].response.body.error.param, 'max_tokens');
});

test('refusals: unknown endpoint 400, completion window 400, oversized file 413, unknown ids 404', async () => {
  const file = await upload([chatLine('x')]);
  await rejectsWith(client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' }),
    400, (err) => {
      assert.equal(err.code, 'unknown_endpoint');
      assert.equal(err.param, 'endpoint');
      assert.match(err.message, /\/v1\/embeddings/);
    });
  await rejectsWith(createBatch(file.id, { completion_window: '48h' }), 400, (err) => assert.equal(err.param, 'completion_window'));
  await rejectsWith(createBatch(file.id, { output_expires_after: { anchor: 'created_at', seconds: 3600 } }), 400,
    (err) => { assert.equal(err.param, 'output_expires_after'); assert.equal(err.code, 'unsupported_field'); });
  const big = Buffer.alloc(1536 * 1024, 'x');  // 1.5 MiB over --max-file-mb 1
  await rejectsWith(client.files.create({ file: await toFile(big, 'big.jsonl'), purpose: 'batch' }), 413, (err) => {
    assert.equal(err.code, 'file_too_large');
    assert.match(err.message, /1048576 bytes/);
  });
  await rejectsWith(client.files.create({ file: await toFile(Buffer.from('{}\n'), 'a.jsonl'), purpose: 'fine-tune' }), 400,
    (err) => assert.equal(err.param, 'purpose'));
  const named = (id) => (err) => assert.match(err.message, new RegExp(id));
  await rejectsWith(client.files.retrieve('file-missing1'), 404, named('file-missing1'));
  await rejectsWith(client.files.content('file-missing2'), 404, named('file-missing2'));
  await rejectsWith(client.files.delete('file-missing3'), 404, named('file-missing3'));
  await rejectsWith(client.batches.retrieve('batch_missing4'), 404, named('batch_missing4'));
  await rejectsWith(client.batches.cancel('batch_missing5'), 404, named('batch_missing5'));
  await rejectsWith(createBatch('file-missing6'), 404, (err) => {
    assert.equal(err.param, 'input_file_id');
    assert.match(err.message, /file-missing6/);
  });
  const deleted = await client.files.delete(file.id);
  assert.deepEqual(deleted, { id: file.id, object: 'file', deleted: true });
  await rejectsWith(client.files.retrieve(file.id), 404);
});

// Lines slow enough (ignore_eos) that a batch of one line at a time is seen part-way (in progress, some
// lines done, not all). Yields such a batch with `n` lines; the caller says (returns true) when it is done
// with it, or asks for another, twice as long, when the batch still outran it.
async function* batchesSeenPartWay(n) {
  for (; n <= 12 * 64; n *= 2) {
    const ids = Array.from({ length: n }, (_, i) => `slow-${n}-${i}`);
    const lines = ids.map((id) => chatLine(id, { max_tokens: 200, ignore_eos: true }));
    const created = await createBatch((await upload(lines)).id);
    const partWay = (b) => b.status === 'in_progress' && b.request_counts.completed >= 1 && b.request_counts.completed < n;
    const b = await poll(created.id, (x) => FINAL.has(x.status) || partWay(x));
    if (partWay(b)) yield { batch: b, ids };
    else await poll(created.id);
  }
  throw new Error('every batch finished before it could be seen part-way');
}

test('cancel stops the batch: the lines that finished are in the output, each once', async () => {
  for await (const { batch, ids } of batchesSeenPartWay(24)) {
    const cancelling = await client.batches.cancel(batch.id).catch((err) => {
      if (err.status === 409) return null;  // it finished meanwhile: again with more lines
      throw err;
    });
    if (cancelling === null) continue;
    assert.ok(['cancelling', 'cancelled'].includes(cancelling.status), cancelling.status);
    const done = await poll(batch.id);
    assert.equal(done.status, 'cancelled');
    assert.ok(done.cancelled_at >= done.cancelling_at);
    const out = await jsonl(done.output_file_id);
    assert.equal(out.length, done.request_counts.completed);
    assert.ok(out.length >= 1 && out.length < ids.length, `${out.length} of ${ids.length}`);
    assert.equal(new Set(out.map((l) => l.custom_id)).size, out.length);
    assert.deepEqual(out.map((l) => l.custom_id), ids.filter((id) => out.some((l) => l.custom_id === id)), 'input order');
    assert.equal((await client.batches.cancel(batch.id)).status, 'cancelled', 'a second cancel answers the batch');
    break;
  }
  const finished = await createBatch((await upload([chatLine('late')])).id);
  await poll(finished.id);
  await rejectsWith(client.batches.cancel(finished.id), 409, (err) => assert.equal(err.code, 'batch_not_cancellable'));
});

// The 8 hex digits after "chatcmpl-": one per server process.
const salt = (requestId) => requestId.slice('chatcmpl-'.length, 'chatcmpl-'.length + 8);

test('a server killed mid-batch and restarted answers every line exactly once', async () => {
  let probe = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
  for await (const { batch, ids } of batchesSeenPartWay(12)) {
    const firstSalt = salt(probe.id);
    const completedBefore = batch.request_counts.completed;
    const exited = new Promise((r) => server.proc.on('exit', (code, signal) => r(signal)));
    server.proc.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    server = await startServer(modelDir, serveArgs);
    connect();
    const resumed = await client.batches.retrieve(batch.id);
    assert.ok(resumed.request_counts.completed >= completedBefore, 'recorded lines survive the kill');
    assert.equal(resumed.request_counts.total, ids.length);
    const done = await poll(batch.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.request_counts, { total: ids.length, completed: ids.length, failed: 0 });
    const out = await jsonl(done.output_file_id);
    assert.deepEqual(out.map((l) => l.custom_id), ids, 'every line exactly once, in input order');
    assert.equal(done.error_file_id, null);

    // Lines answered before the kill carry the first process's ids; the restarted server ran exactly the
    // others (its finished generations, counted in /metrics): no finished line ran twice.
    const bySecond = out.filter((l) => salt(l.response.request_id) !== firstSalt).length;
    assert.ok(ids.length - bySecond >= completedBefore, `${ids.length - bySecond} lines by the first server`);
    let ran = 0;
    for (let i = 0; i < 500 && ran < bySecond; ++i) {  // the count follows the answer by microseconds
      ran = await metric(server.url, 'hichat_request_prompt_tokens_count');
      if (ran < bySecond) await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(ran, bySecond, 'the restarted server ran only the lines not recorded before the kill');
    if (bySecond >= 1) break;  // else every line was recorded before the kill: again with more lines
    probe = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
  }
});

test('with API keys, files and batches belong to the key that made them', async () => {
  const keyed = await startServer(modelDir, ['--api-key', 'sk-batch-a', '--api-key', 'sk-batch-b',
    '--session-db', path.join(dir, 'keyed.db'), '--files-dir', path.join(dir, 'keyed-files')]);
  try {
    const a = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sk-batch-a', maxRetries: 0 });
    const b = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sk-batch-b', maxRetries: 0 });
    const file = await a.files.create({ file: await toFile(Buffer.from(chatLine('k') + '\n'), 'k.jsonl'), purpose: 'batch' });
    const batch = await a.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await rejectsWith(b.files.retrieve(file.id), 404);
    await rejectsWith(b.files.content(file.id), 404);
    await rejectsWith(b.batches.retrieve(batch.id), 404);
    await rejectsWith(b.batches.cancel(batch.id), 404);
    await rejectsWith(b.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }), 404);
    assert.deepEqual((await b.batches.list()).data, []);
    assert.equal((await a.batches.list()).data[0].id, batch.id);
    const unauthenticated = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await rejectsWith(unauthenticated.batches.list(), 401);
  } finally {
    assert.equal(await keyed.stop(), 0);
  }
});
