/**
 * Measures rawko's web face in real Chromium (run by `scripts/test-web.sh --measure`; never a
 * pass/fail test):
 *
 * 1. page load to first paint: 20 loads of the page (signed in, a fresh tab each), the
 *    `first-paint` and `first-contentful-paint` entries of the Paint Timing API (milliseconds
 *    from the navigation's start), and when the page is live (its event stream connected and
 *    the lists fetched);
 * 2. blocked call to approval shown: a scripted agent makes 100 Writes in a read-only Plan
 *    phase, one after the other; each is denied from the page (its Deny button) once it shows.
 *    The call was blocked at `expiresAt − timeoutSeconds × 1000` (rawko's clock); it showed
 *    when a MutationObserver in the page saw its card added (`performance.timeOrigin +
 *    performance.now()`, the browser's clock; both clocks are this machine's).
 *
 * Prints the figures (min, p50, p90, p99, max).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium } from 'playwright-core';
import { ARTIFACTS, CHROMIUM, RAWKO_BIN, apiGet, log, makeWorkspace, signIn, startWeb, stopProcess, tempRoot } from './lib.mjs';

const LOADS = 20;
const CALLS = 100;

function script() {
  const turns = [];
  for (let i = 1; i <= CALLS; i++) {
    turns.push(`  - tool_calls:\n      - {name: Write, input: {path: "blocked/${i}.md", content: "call ${i}\\n"}}`);
  }
  turns.push('  - text: "Done trying."\n    delay_ms: 60000');
  return `turns:\n${turns.join('\n')}\n`;
}

function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

function figures(name, values, unit = 'ms') {
  const sorted = [...values].sort((a, b) => a - b);
  const f = (x) => `${x.toFixed(1)} ${unit}`;
  log(
    `${name} (n=${sorted.length}): min ${f(sorted[0])}, p50 ${f(quantile(sorted, 0.5))}, p90 ${f(quantile(sorted, 0.9))}, ` +
      `p99 ${f(quantile(sorted, 0.99))}, max ${f(sorted[sorted.length - 1])}`,
  );
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const root = tempRoot('rawko-web-measure-');
  const space = makeWorkspace(root, 'measure', script());
  let server;
  let browser;
  try {
    server = await startWeb(space, path.join(ARTIFACTS, 'rawko-web-measure.log'));
    const cookie = await signIn(server);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const [name, value] = cookie.split('=');
    await context.addCookies([{ name, value, url: `${server.origin}/`, httpOnly: true, sameSite: 'Strict' }]);

    // 1. Page load to first paint.
    const fp = [];
    const fcp = [];
    const live = [];
    const sizes = {};
    for (let i = 0; i < LOADS; i++) {
      const page = await context.newPage();
      if (i === 0) {
        page.on('response', async (r) => {
          const body = await r.body().catch(() => null);
          if (body) sizes[new URL(r.url()).pathname] = body.length;
        });
      }
      await page.goto(`${server.origin}/`, { waitUntil: 'load' });
      await page.locator('#connection', { hasText: 'live' }).waitFor({ timeout: 30_000 });
      const t = await page.evaluate(
        () =>
          new Promise((resolve) =>
            requestAnimationFrame(() =>
              setTimeout(() => {
                const get = (n) => performance.getEntriesByName(n)[0]?.startTime ?? NaN;
                resolve({ fp: get('first-paint'), fcp: get('first-contentful-paint') });
              }, 0),
            ),
          ),
      );
      // When the page had its data: the approvals fetched after the event stream's hello.
      const liveAt = await page.evaluate(() => {
        const entry = performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/api/approvals')).pop();
        return entry ? entry.responseEnd : NaN;
      });
      fp.push(t.fp);
      fcp.push(t.fcp);
      live.push(liveAt);
      await page.close();
    }
    log(`rawko: ${RAWKO_BIN}; Chromium: ${browser.version()}`);
    log(`assets: ${Object.entries(sizes).map(([p, n]) => `${p} ${n} B`).join(', ')}`);
    figures(`page load to first paint over ${LOADS} loads`, fp.filter(Number.isFinite));
    figures(`page load to first contentful paint over ${LOADS} loads`, fcp.filter(Number.isFinite));
    figures(`page load to tasks and approvals fetched (live) over ${LOADS} loads`, live.filter(Number.isFinite));

    // 2. Blocked call to approval shown.
    const page = await context.newPage();
    await page.goto(`${server.origin}/`);
    await page.locator('#connection', { hasText: 'live' }).waitFor({ timeout: 30_000 });
    await page.evaluate(() => {
      window.__shown = {};
      const list = document.getElementById('approval-list');
      new MutationObserver((records) => {
        const now = performance.timeOrigin + performance.now();
        for (const r of records) {
          for (const node of r.addedNodes) {
            const id = node.dataset && node.dataset.toolCallId;
            if (id && !(id in window.__shown)) window.__shown[id] = now;
          }
        }
      }).observe(list, { childList: true });
    });
    await page.getByLabel('Description').fill('Try a hundred writes');
    await page.getByLabel('Workflow').selectOption({ label: 'Web Test' });
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const delays = [];
    const started = Date.now();
    for (let i = 1; i <= CALLS; i++) {
      const card = page.locator('#approval-list .approval', { hasText: `blocked/${i}.md` });
      await card.waitFor({ timeout: 30_000 });
      const id = await card.getAttribute('data-tool-call-id');
      const approvals = (await apiGet(server, cookie, '/api/approvals')).approvals;
      const a = approvals.find((x) => x.toolCallId === id);
      if (!a) throw new Error(`approval ${id} is not pending on the server`);
      const shownAt = await page.evaluate((key) => window.__shown[key], id);
      const blockedAt = a.expiresAt - a.timeoutSeconds * 1000;
      delays.push(shownAt - blockedAt);
      await card.getByRole('button', { name: 'Deny', exact: true }).click();
      await card.waitFor({ state: 'detached', timeout: 30_000 });
    }
    log(`${CALLS} blocked calls answered in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    figures(`blocked call to approval shown in the page over ${CALLS} calls`, delays);
    const written = fs.existsSync(path.join(space.ws, 'blocked')) ? fs.readdirSync(path.join(space.ws, 'blocked')).length : 0;
    if (written) log(`warning: ${written} denied Write(s) reached the disk`);
    return 0;
  } catch (error) {
    log(`measure failed: ${error.stack || error}`);
    return 1;
  } finally {
    await browser?.close().catch(() => {});
    if (server) await stopProcess(server.child);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

process.exitCode = await main();
