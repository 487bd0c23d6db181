// The chat page in headless Chromium: type, see streamed text; saves a screenshot as an artifact.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { makeModelDir, startServer } from './server_harness.mjs';

let server, browser;
const artifacts = process.env.HICHAT_ARTIFACTS_DIR || '.';

before(async () => {
  server = await startServer(makeModelDir());
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});
after(async () => {
  await browser?.close();
  assert.equal(await server.stop(), 0);
});

test('typing a message streams a reply into the page', async () => {
  const page = await browser.newPage();
  await page.goto(server.url + '/');
  await page.waitForFunction(() => document.getElementById('model').textContent === 'tiny');
  await page.fill('#input', 'Hello there!');
  await page.keyboard.press('Enter');
  await page.waitForSelector('.msg.user');
  await page.waitForFunction(() => {
    const a = document.querySelector('.msg.assistant');
    return a && a.textContent.length > 0 && !document.getElementById('send').disabled;
  }, null, { timeout: 30000 });
  const reply = await page.textContent('.msg.assistant');
  assert.ok(reply.length > 0);
  assert.equal(await page.textContent('.msg.user'), 'Hello there!');
  fs.mkdirSync(artifacts, { recursive: true });
  const shot = path.join(artifacts, 'chat_page.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 1000);
});
