// The chat page in headless Chromium against the real `hichat serve` with the default model (a 1024-token
// context), its conversations stored in a SQLite file: two turns with their tokens/s and cached-token figures,
// rename, reload, a server restart on the same file, delete; a conversation deleted elsewhere; a conversation
// longer than the context (truncation "auto"); stop and new chat during a reply; the API key box. Saves
// screenshots as artifacts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { DEFAULT_MODEL, startServer } from './server_harness.mjs';

let server, keyed, browser, context;
const artifacts = process.env.HICHAT_ARTIFACTS_DIR || '.';
const TURN_MS = 300000;  // generous: a bound on a hung page, not a latency check
const KEY = 'sk-page-test';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hichat-chat-page-'));
const dbPath = path.join(dir, 'sessions.db');

before(async () => {
  server = await startServer(DEFAULT_MODEL, ['--session-db', dbPath]);
  keyed = await startServer(DEFAULT_MODEL, ['--api-key', KEY, '--session-db', path.join(dir, 'keyed.db')]);
  context = (await (await fetch(server.url + '/v1/models')).json()).data[0].max_model_len;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  assert.equal(await server.stop(), 0);
  assert.equal(await keyed.stop(), 0);
  fs.rmSync(dir, { recursive: true, force: true });
});

// The same database file and the same port (so the page's origin, and its saved list, stay the same).
async function restartServer() {
  const port = server.port;
  assert.equal(await server.stop(), 0);
  server = await startServer(DEFAULT_MODEL, ['--session-db', dbPath, '--port', String(port)]);
  assert.equal(server.port, port);
}

// A fresh page (its own browser context, so no saved key or list) that records every turn's request body.
async function openPage(srv, modelText = 'default') {
  const page = await browser.newPage();
  const turns = [], urls = [];
  page.on('request', (r) => {
    urls.push(r.url());
    if (r.url().endsWith('/v1/responses') && r.method() === 'POST') turns.push(JSON.parse(r.postData()));
  });
  await page.goto(srv.url + '/');
  await page.waitForFunction((t) => document.getElementById('model').textContent === t, modelText);
  return { page, turns, urls };
}
async function settings(page, { system = '', temperature = '', maxOutput = '' }) {
  await page.$eval('#settings', (d) => { d.open = true; });
  await page.fill('#system', system);
  await page.fill('#temperature', temperature);
  await page.fill('#max-output', maxOutput);
}

// Types a message, presses Enter and waits until the page is ready for the next one: the reply shows its
// figures, or an error is shown (a failed turn leaves the log and goes back into the input box).
async function say(page, text) {
  const counts = () => ['.msg.assistant .stats', '.msg.error', '.msg.assistant.stopped'].map(
    (s) => document.querySelectorAll(s).length);
  const before = await page.evaluate(counts);
  await page.fill('#input', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction(([replies, errors, stopped]) => !document.getElementById('send').disabled &&
    (document.querySelectorAll('.msg.assistant .stats').length === replies + 1 ||
     document.querySelectorAll('.msg.error').length > errors ||
     document.querySelectorAll('.msg.assistant.stopped').length > stopped),
  before, { timeout: TURN_MS });
}
const lastReply = (page) => page.locator('.msg.assistant').last();
const replyText = (page) => lastReply(page).locator('.text').textContent();
const listed = (page) => page.$$eval('#conversations li', (lis) => lis.map((li) => ({
  id: li.dataset.id, title: li.querySelector('.open')?.textContent, current: li.classList.contains('current') })));
const logTexts = (page) => page.$$eval('#log .msg', (ms) => ms.map((m) => [m.classList[1], m.querySelector('.text').textContent]));
const waitForLog = (page, n) => page.waitForFunction((k) => document.querySelectorAll('#log .msg').length === k, n,
                                                     { timeout: TURN_MS });

// The conversation's items as the server has them, [role, text] in order.
async function serverItems(srv, id) {
  const r = await fetch(`${srv.url}/v1/conversations/${id}/items?order=asc&limit=100`);
  assert.equal(r.status, 200);
  return (await r.json()).data.map((it) => [it.role, it.content.map((c) => c.text).join('')]);
}
const conversationStatus = async (srv, id) => (await fetch(`${srv.url}/v1/conversations/${id}`)).status;

const FIRST = 'In the beginning God created the heaven and the earth. And the earth was without form, and void; ' +
              'and darkness was upon the face of the deep. Tell me what came next.';
const SECOND = 'And what did God say then?';

test('a conversation: two turns with their figures, rename, reload, server restart, delete', async () => {
  const { page, turns, urls } = await openPage(server);
  assert.match(await page.textContent('#context'), new RegExp(`${context}-token context`));
  assert.deepEqual(await listed(page), []);
  await settings(page, { system: 'You are a terse assistant.', temperature: '0', maxOutput: '40' });
  await say(page, FIRST);
  await say(page, SECOND);
  assert.equal(await page.locator('.msg.error').count(), 0);

  // Both turns went to one conversation, as streamed responses with the settings.
  const [conv] = await listed(page);
  assert.match(conv.id, /^conv_/);
  assert.equal(conv.current, true);
  assert.equal(conv.title, FIRST.slice(0, 60));
  assert.equal(turns.length, 2);
  turns.forEach((body, i) => assert.deepEqual(body, {
    conversation: conv.id, input: [FIRST, SECOND][i], stream: true, truncation: 'auto',
    instructions: 'You are a terse assistant.', temperature: 0, max_output_tokens: 40 }));

  // Each reply shows its tokens/s and cached prompt tokens; the second turn's prompt starts with the first's.
  const figures = await page.$$eval('.msg.assistant', (ms) => ms.map((m) => ({ ...m.dataset,
    stats: m.querySelector('.stats').textContent, text: m.querySelector('.text').textContent })));
  assert.equal(figures.length, 2);
  for (const f of figures) {
    assert.ok(f.text.length > 0, 'an empty reply');
    assert.match(f.stats, /^\d+\.\d tokens\/s · \d+ output tokens · \d+ of \d+ prompt tokens cached$/);
    assert.ok(Number(f.tokensPerSecond) > 0, f.stats);
    assert.match(f.itemId, /^msg_/);
  }
  assert.ok(Number(figures[1].cachedTokens) > 0, `no cached tokens on the second turn: ${figures[1].stats}`);
  assert.ok(Number(figures[1].cachedTokens) <= Number(figures[1].inputTokens));

  // The server has the conversation as the page shows it.
  const shown = await logTexts(page);
  assert.deepEqual(shown.map(([role]) => role), ['user', 'assistant', 'user', 'assistant']);
  assert.deepEqual(await serverItems(server, conv.id), shown);
  fs.mkdirSync(artifacts, { recursive: true });
  const shot = path.join(artifacts, 'chat_page.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 1000);
  // Self-contained: the page itself, then only API calls to its own server.
  assert.equal(urls[0], server.url + '/');
  for (const u of urls.slice(1)) assert.ok(u.startsWith(server.url + '/v1/'), u);

  // Rename: the title goes into the conversation's metadata on the server.
  await page.click(`#conversations li[data-id="${conv.id}"] .rename`);
  await page.fill('#conversations .rename-box', 'Genesis, chapter one');
  await page.press('#conversations .rename-box', 'Enter');
  await page.waitForSelector(`#conversations li[data-id="${conv.id}"] .open >> text="Genesis, chapter one"`);
  const meta = await (await fetch(`${server.url}/v1/conversations/${conv.id}`)).json();
  assert.deepEqual(meta.metadata, { title: 'Genesis, chapter one' });

  // A reload lists it and reopens it with its messages (and the figures the page kept).
  await page.reload();
  await waitForLog(page, 4);
  assert.deepEqual(await listed(page), [{ id: conv.id, title: 'Genesis, chapter one', current: true }]);
  assert.deepEqual(await logTexts(page), shown);
  assert.equal(await page.locator('.msg.assistant .stats').count(), 2);

  // A restarted server on the same file still has it; the page reopens it and the conversation goes on.
  await restartServer();
  await page.reload();
  await waitForLog(page, 4);
  assert.deepEqual(await logTexts(page), shown);
  await page.click('#new-chat');
  assert.equal(await page.locator('#log > *').count(), 0);
  await page.click(`#conversations li[data-id="${conv.id}"] .open`);
  await waitForLog(page, 4);
  await say(page, 'And the evening and the morning?');
  assert.equal(await page.locator('.msg.error').count(), 0);
  assert.equal((await serverItems(server, conv.id)).length, 6);
  assert.equal(turns.at(-1).conversation, conv.id);

  // Delete (after the confirmation): gone from the server, the list and the log, also after a reload.
  page.once('dialog', (d) => d.accept());
  await page.click(`#conversations li[data-id="${conv.id}"] .delete`);
  await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 0);
  assert.equal(await page.locator('#log > *').count(), 0);
  assert.equal(await conversationStatus(server, conv.id), 404);
  await page.reload();
  await page.waitForFunction(() => document.getElementById('model').textContent === 'default');
  assert.deepEqual(await listed(page), []);
  await page.close();
});

test('a conversation deleted elsewhere leaves the list with a note, and the next message starts a new one',
     async () => {
  const { page } = await openPage(server);
  await settings(page, { maxOutput: '8' });
  await say(page, 'Who was Abraham?');
  await page.click('#new-chat');
  await say(page, 'Who was Isaac?');
  const [isaac, abraham] = await listed(page);
  assert.equal(abraham.title, 'Who was Abraham?');
  assert.equal(isaac.title, 'Who was Isaac?');
  assert.equal(isaac.current, true);

  assert.equal((await fetch(`${server.url}/v1/conversations/${abraham.id}`, { method: 'DELETE' })).status, 200);
  await page.reload();
  await page.waitForSelector('#list-note:has-text("no longer on the server")');
  assert.match(await page.textContent('#list-note'), /^"Who was Abraham\?" is no longer on the server/);
  assert.deepEqual((await listed(page)).map((c) => c.id), [isaac.id]);

  // The open one goes away while it is open: the turn fails with the note, and the message stays in the box.
  await waitForLog(page, 2);
  assert.equal((await fetch(`${server.url}/v1/conversations/${isaac.id}`, { method: 'DELETE' })).status, 200);
  await page.fill('#input', 'Who was Jacob?');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#list-note:has-text("Who was Isaac?")');
  assert.deepEqual(await listed(page), []);
  assert.equal(await page.inputValue('#input'), 'Who was Jacob?');
  await say(page, 'Who was Jacob?');
  const [jacob] = await listed(page);
  assert.equal(jacob.title, 'Who was Jacob?');
  assert.deepEqual((await serverItems(server, jacob.id)).map(([role]) => role), ['user', 'assistant']);
  await page.close();
});

test('a conversation of more than one page of items reopens whole and in order', async () => {
  const { page } = await openPage(server);
  await settings(page, { maxOutput: '8' });
  await say(page, 'Number the tribes of Israel.');
  const [conv] = await listed(page);
  const added = [];
  for (let batch = 0; batch < 6; batch++) {  // 120 more items, 20 per call (the API's most)
    const items = Array.from({ length: 20 }, (_, k) => {
      const n = batch * 20 + k;
      added.push([n % 2 ? 'assistant' : 'user', `item ${n}`]);
      return { type: 'message', role: n % 2 ? 'assistant' : 'user', content: `item ${n}` };
    });
    const r = await fetch(`${server.url}/v1/conversations/${conv.id}/items`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ items }) });
    assert.equal(r.status, 200, await r.text());
  }
  const before = await logTexts(page);
  await page.reload();
  await waitForLog(page, 122);
  assert.deepEqual(await logTexts(page), [...before, ...added]);
  await page.close();
});

const VERSES = [
  'In the beginning God created the heaven and the earth.',
  'And the earth was without form, and void; and darkness was upon the face of the deep.',
  'And God said, Let there be light: and there was light.',
  'And God saw the light, that it was good: and God divided the light from the darkness.',
  'The LORD is my shepherd; I shall not want.',
  'He maketh me to lie down in green pastures: he leadeth me beside the still waters.',
  'To every thing there is a season, and a time to every purpose under the heaven.',
];
// About 700 characters (some 175 tokens): seven of them and their replies overflow the context.
const message = (i) => `Question ${i + 1}. ` +
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((k) => VERSES[(i + k) % VERSES.length]).join(' ') + ' What sayest thou?';

test('a conversation longer than the context keeps working: the server drops the oldest turns', async () => {
  const { page, turns } = await openPage(server);
  const cap = 64, n = 8;
  await settings(page, { maxOutput: String(cap) });
  for (let i = 0; i < n; i++) {
    await say(page, message(i));
    assert.equal(await page.locator('.msg.error').count(), 0, `an error is shown after turn ${i + 1}`);
    assert.ok((await replyText(page)).length > 0, `reply ${i + 1} is empty`);
    const prompt = Number(await lastReply(page).getAttribute('data-input-tokens'));
    assert.ok(prompt > 0 && prompt + cap <= context, `turn ${i + 1}: a ${prompt}-token prompt`);
  }
  assert.ok(turns.every((b) => b.truncation === 'auto' && b.max_output_tokens === cap));
  // The prompt was cut (the full history would not fit), the conversation was not.
  const [conv] = await listed(page);
  assert.equal((await serverItems(server, conv.id)).length, 2 * n);
  assert.ok(n * 175 > context);
  fs.mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: path.join(artifacts, 'chat_page_long.png'), fullPage: true });
  await page.close();
});

// Clicks the named button from inside the page as soon as the next reply bubble shows its first streamed text,
// before the page reads any further: the outcome does not depend on how fast the model is.
async function clickOnFirstToken(page, buttonId) {
  await page.evaluate((id) => {
    const log = document.getElementById('log');
    const before = log.querySelectorAll('.msg.assistant').length;
    const watch = new MutationObserver(() => {
      const texts = log.querySelectorAll('.msg.assistant .text');
      if (texts.length > before && texts[texts.length - 1].textContent.length > 0) {
        watch.disconnect();
        document.getElementById(id).click();
      }
    });
    watch.observe(log, { subtree: true, childList: true, characterData: true });
  }, buttonId);
}

test('stop ends the stream and marks the partial reply; the conversation goes on', async () => {
  const { page, turns } = await openPage(server);
  await clickOnFirstToken(page, 'stop');
  await say(page, 'Tell me of the flood, and of Noah, and of all the beasts that went into the ark.');
  const stopped = lastReply(page);
  assert.equal(await stopped.getAttribute('class'), 'msg assistant stopped');
  assert.equal(await stopped.locator('.note').textContent(), 'stopped');
  assert.ok((await replyText(page)).length > 0);
  assert.equal(await stopped.locator('.stats').count(), 0);
  assert.equal(turns[0].max_output_tokens, undefined);
  assert.equal(await page.isDisabled('#stop'), true);

  await settings(page, { maxOutput: '16' });
  await say(page, 'And what came after?');
  assert.equal(await page.locator('.msg.error').count(), 0);
  assert.ok((await replyText(page)).length > 0);
  assert.equal(await lastReply(page).locator('.stats').count(), 1);
  assert.equal(turns[1].conversation, turns[0].conversation);
  assert.equal((await listed(page)).length, 1);
  await page.close();
});

test('new chat during a reply stops it and clears the log; the next message starts a new conversation',
     async () => {
  const { page, turns } = await openPage(server);
  await settings(page, { maxOutput: '8' });
  await say(page, 'Who was Joseph?');
  await settings(page, { maxOutput: '' });
  await clickOnFirstToken(page, 'new-chat');
  await page.fill('#input', 'And his brothers?');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('log').children.length === 0 &&
                                   !document.getElementById('send').disabled, null, { timeout: TURN_MS });
  assert.equal(await page.isDisabled('#stop'), true);
  assert.equal((await listed(page)).filter((c) => c.current).length, 0);
  await settings(page, { maxOutput: '8' });
  await say(page, 'Who was Benjamin?');
  const list = await listed(page);
  assert.equal(list.length, 2);
  assert.deepEqual(list.map((c) => c.title), ['Who was Benjamin?', 'Who was Joseph?']);
  assert.notEqual(turns.at(-1).conversation, turns[0].conversation);
  assert.equal(await page.locator('#log > *').count(), 2);
  await page.close();
});

test('with no key, a 401 points at the key box; with the key, the chat works and has its own list', async () => {
  const { page } = await openPage(keyed, 'needs an API key');
  assert.equal(await page.getAttribute('#key', 'class'), 'attention');
  await page.fill('#input', 'Hello?');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.error');
  const error = await page.textContent('.msg.error');
  assert.match(error, /needs an API key.*"API key" box/);
  assert.doesNotMatch(error, /Authorization|Bearer|curl|header/i);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'key');
  assert.equal(await page.getAttribute('#key', 'aria-invalid'), 'true');
  assert.equal(await page.locator('.msg.user').count(), 0);
  assert.equal(await page.inputValue('#input'), 'Hello?');

  await page.fill('#key', 'sk-wrong');
  await page.press('#key', 'Tab');
  await page.waitForFunction(() => document.getElementById('model').textContent === 'needs an API key' &&
                                   document.getElementById('key').classList.contains('attention'));
  await page.click('#send');
  await page.waitForSelector('.msg.error >> text=refused this API key');

  await page.fill('#key', KEY);
  await page.press('#key', 'Tab');
  await page.waitForFunction(() => document.getElementById('model').textContent === 'default');
  assert.equal(await page.getAttribute('#key', 'class'), '');
  await settings(page, { maxOutput: '8' });
  await say(page, 'Hello?');
  assert.equal(await page.textContent('.msg.user .text'), 'Hello?');
  const [conv] = await listed(page);
  assert.match(conv.id, /^conv_/);
  // The list is saved under a hash of the key, never the key itself; another key sees another list.
  const stored = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('hichat-conversations:')));
  assert.equal(stored.length, 2);  // the list and the open conversation of this key
  assert.ok(stored.every((k) => !k.includes(KEY)));
  await page.fill('#key', 'sk-wrong');
  await page.press('#key', 'Tab');
  await page.waitForFunction(() => document.getElementById('model').textContent === 'needs an API key');
  assert.deepEqual(await listed(page), []);
  await page.fill('#key', KEY);
  await page.press('#key', 'Tab');
  await waitForLog(page, 2);
  assert.deepEqual((await listed(page)).map((c) => c.id), [conv.id]);
  await page.close();
});
