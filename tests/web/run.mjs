/**
 * The web face's end-to-end test in real Chromium (Debian's, driven by playwright-core), against
 * the real rawko binary and the scripted agent, in a temporary git workspace with fresh XDG
 * directories.
 *
 * 1. The token: every path answers 401 without the cookie; the first visit with `?token=` answers
 *    303 to `/` with an HttpOnly, SameSite=Strict cookie; a POST with a foreign Origin, or none,
 *    answers 403 and starts nothing.
 * 2. A task started from the page (`rawko web`): Description, Workflow, Start; the agent tries a
 *    Write in the read-only Plan phase; the page shows the approval (tool, reason, summary, diff,
 *    countdown, the four buttons in order, none focused; announced in the live region) at the top
 *    and the task as "waiting on you" with rawko's breadcrumb; screenshots at 1280×800 and 390×844;
 *    Deny → the file is not written and the phase tree moves on (Plan ✓, Build ▶); the Build
 *    phase's Write is allowed once → the file is on disk; the task completes, every phase ✓.
 * 3. An editor attached: headless Neovim with the repository's plugin starts a task through
 *    `rawko serve --web 127.0.0.1:0`; the blocked Write is asked in Neovim and shown in the page;
 *    it is answered in the page; it leaves Neovim's questions and the page, and the file is
 *    written.
 *
 * Each step is named and printed `ok`/`not ok`; a failed step stops the rest of its group only.
 * The last line is `N passed, N failed`; the exit status is 1 when a step failed.
 *
 * Environment: RAWKO_BIN (default target/debug/rawko), RAWKO_NVIM (Neovim 0.11, for group 3),
 * CHROMIUM (default /usr/bin/chromium), ARTIFACTS (default tests/web/artifacts), REPO.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium } from 'playwright-core';
import {
  ARTIFACTS,
  CHROMIUM,
  REPO,
  RAWKO_BIN,
  apiGet,
  cookieOf,
  log,
  makeWorkspace,
  parseUrlLine,
  request,
  signIn,
  sleep,
  startWeb,
  stopProcess,
  tempRoot,
  waitUntil,
} from './lib.mjs';

const STEP_MS = 30_000;
const NVIM = process.env.RAWKO_NVIM || '';
/** A directory of page assets to serve instead of the binary's (through the browser's routing),
 * to try an edit of the page without rebuilding rawko; the server still checks the token. */
const ASSETS_DIR = process.env.RAWKO_WEB_TEST_ASSETS || '';

/** A browser context; with RAWKO_WEB_TEST_ASSETS, the page's files come from that directory. */
async function newContext(browser, options) {
  const context = await browser.newContext(options);
  cleanups.push(() => context.close().catch(() => {}));
  if (ASSETS_DIR) {
    await context.route(
      (url) => url.pathname === '/' || url.pathname.startsWith('/assets/'),
      async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        const url = new URL(route.request().url());
        if (response.status() === 303) {
          // The browser does not route the request a redirect leads to: go on with a fresh
          // navigation instead (the cookie is in the context already).
          return route.fulfill({ status: 200, contentType: 'text/html', body: '<meta http-equiv="refresh" content="0;url=/">' });
        }
        const name = url.pathname === '/' ? 'index.html' : url.pathname.slice('/assets/'.length);
        const file = path.join(ASSETS_DIR, name);
        if (response.status() !== 200 || !fs.existsSync(file)) return route.fulfill({ response });
        return route.fulfill({ response, body: fs.readFileSync(file, 'utf8') });
      },
    );
  }
  return context;
}

/** The agent of the page's task: a Write in Plan (to deny), on to Build, a Write there (to
 * allow), on to Check, and done. */
const WEB_SCRIPT = `turns:
  - text: "Planning first."
    tool_calls:
      - {name: Write, input: {path: DENIED.md, content: "this must not be written\\n"}}
  - text: "The plan is in my reply."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Building."
    tool_calls:
      - {name: Write, input: {path: ALLOWED.md, content: "written after the page allowed it\\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Checked."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
`;

/** The agent of the editor's task: a Write in Plan (answered in the page), then it waits. */
const EDITOR_SCRIPT = `turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: EDITOR.md, content: "allowed from the page\\n"}}
  - text: "Still planning."
    delay_ms: 60000
`;

const results = [];
const cleanups = [];

function slug(name) {
  return name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, '').toLowerCase().slice(0, 60);
}

async function screenshot(page, name) {
  if (!page) return;
  const file = path.join(ARTIFACTS, `${name}.png`);
  try {
    await page.screenshot({ path: file, timeout: 15_000 });
    log(`  screenshot: ${path.relative(REPO, file)}`);
  } catch (error) {
    log(`  screenshot ${file} failed: ${error.message}`);
  }
}

/** A group of steps: after a failed step, the group's later steps count as failed, not run. */
function group(name) {
  let broken = false;
  return {
    async step(title, run, page) {
      const full = `${name}: ${title}`;
      if (broken) {
        results.push({ name: full, ok: false });
        log(`not ok - ${full} (not reached: an earlier step of this group failed)`);
        return false;
      }
      const started = Date.now();
      try {
        await run();
        results.push({ name: full, ok: true });
        log(`ok - ${full} (${Date.now() - started} ms)`);
        return true;
      } catch (error) {
        broken = true;
        results.push({ name: full, ok: false });
        log(`not ok - ${full}: ${error && error.stack ? error.stack : error}`);
        await screenshot(typeof page === 'function' ? page() : page, `FAILED-${slug(full)}`);
        return false;
      }
    },
    fail() {
      broken = true;
    },
  };
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

function text(s) {
  return String(s ?? '').replace(/\s+/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------
// Page helpers
// ---------------------------------------------------------------------------------------------

function card(page, toolCallId) {
  return page.locator(`#approval-list .approval[data-tool-call-id="${toolCallId}"]`);
}

/** Waits for an approval card whose text matches `pattern`; returns its toolCallId. */
async function waitForCard(page, pattern) {
  const c = page.locator('#approval-list .approval', { hasText: pattern }).first();
  await c.waitFor({ state: 'visible', timeout: STEP_MS });
  return c.getAttribute('data-tool-call-id');
}

/** The phase tree as [mark, name] pairs, e.g. [['✓', '📋 Plan'], ['▶', '🛠️ Build'], …]. */
async function phaseTree(page) {
  return page.locator('#phase-tree li').evaluateAll((items) =>
    items.map((li) => [li.querySelector('.mark')?.textContent ?? '', li.querySelector('.name')?.textContent ?? '']),
  );
}

async function waitForTree(page, expected, what) {
  const want = JSON.stringify(expected);
  let got = '';
  try {
    await waitUntil(what, STEP_MS, async () => {
      got = JSON.stringify(await phaseTree(page));
      return got === want;
    });
  } catch {
    throw new Error(`the phase tree never showed ${what}: want ${want}, it shows ${got}`);
  }
}

async function waitForFile(file, content, what) {
  await waitUntil(what, STEP_MS, () => fs.existsSync(file) && fs.readFileSync(file, 'utf8') === content);
}

/** Records every text the aria-live region held, so a quick announcement is not missed. */
async function recordAnnouncements(page) {
  await page.evaluate(() => {
    const region = document.querySelector('[aria-live="polite"]');
    window.__announced = [];
    if (!region) return;
    new MutationObserver(() => window.__announced.push(region.textContent)).observe(region, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
}

// ---------------------------------------------------------------------------------------------
// 1. The token and the Origin check
// ---------------------------------------------------------------------------------------------

async function authGroup(root, browser) {
  const g = group('auth');
  const space = makeWorkspace(root, 'auth', WEB_SCRIPT);
  let server;
  let cookie = '';
  const ok = await g.step('rawko web prints its URL with a token', async () => {
    server = await startWeb(space, path.join(ARTIFACTS, 'rawko-web-auth.log'));
    cleanups.push(() => stopProcess(server.child));
    assert(/^rawko web: http:\/\/127\.0\.0\.1:\d+\/\?token=[^\s&]+$/.test(server.stdoutLine), `the line: ${server.stdoutLine}`);
  });
  if (!ok) return;
  await g.step('401 without the cookie: /, /assets/app.js, /assets/app.css, /api/tasks, /api/events', async () => {
    for (const p of ['/', '/assets/app.js', '/assets/app.css', '/api/tasks', '/api/approvals', '/api/info', '/api/events']) {
      const res = await request(server.origin + p);
      assert(res.status === 401, `GET ${p} without the cookie answered ${res.status}, not 401`);
      assert(!res.body.includes('EventSource'), `GET ${p} without the cookie gave the page's code`);
    }
    const page = await request(server.origin + '/');
    assert(/text\/html/.test(String(page.headers['content-type'])), `the 401 page is ${page.headers['content-type']}`);
    const wrong = await request(`${server.origin}/?token=not-the-token`);
    assert(wrong.status === 401, `a wrong ?token= answered ${wrong.status}, not 401`);
    assert(!wrong.headers['set-cookie'], 'a wrong token got a cookie');
    const badCookie = await request(`${server.origin}/api/tasks`, { headers: { Cookie: 'rawko_token=not-the-token' } });
    assert(badCookie.status === 401, `a wrong cookie answered ${badCookie.status}, not 401`);
  });
  await g.step('the first visit with ?token= answers 303 to / with an HttpOnly SameSite=Strict cookie', async () => {
    const res = await request(server.url);
    assert(res.status === 303, `GET /?token= answered ${res.status}, not 303`);
    assert(res.headers.location === '/', `Location is ${res.headers.location}, not /`);
    const set = [].concat(res.headers['set-cookie'] || []).join('\n');
    assert(/^rawko_token=/m.test(set), `no rawko_token cookie: ${set}`);
    assert(/;\s*HttpOnly/i.test(set), `the cookie is not HttpOnly: ${set}`);
    assert(/;\s*SameSite=Strict/i.test(set), `the cookie is not SameSite=Strict: ${set}`);
    assert(/;\s*Path=\//i.test(set), `the cookie has no Path=/: ${set}`);
    cookie = cookieOf(res.headers['set-cookie']);
    let size = 0;
    for (const p of ['/', '/assets/app.js', '/assets/app.css', '/api/tasks']) {
      const ok = await request(server.origin + p, { headers: { Cookie: cookie } });
      assert(ok.status === 200, `GET ${p} with the cookie answered ${ok.status}`);
      if (p.startsWith('/api/')) continue;
      size += Buffer.byteLength(ok.body);
      assert(!/\.innerHTML|outerHTML|insertAdjacentHTML|document\.write/.test(ok.body), `${p} inserts HTML`);
      for (const url of ok.body.matchAll(/(?:src|href)="([^"]+)"/g)) {
        assert(!/^(https?:)?\/\//.test(url[1]), `${p} loads ${url[1]} from the network`);
      }
    }
    assert(size < 200 * 1024, `the page's assets weigh ${size} bytes, not under 200 KB`);
    const events = await request(server.origin + '/api/events', { headers: { Cookie: cookie } });
    assert(events.status === 200, `GET /api/events with the cookie answered ${events.status}`);
    assert(/^text\/event-stream/.test(String(events.headers['content-type'])), `the event stream is ${events.headers['content-type']}`);
    assert(/event: hello/.test(events.body), `the stream does not start with hello: ${events.body.slice(0, 200)}`);
  });
  await g.step('403 for a POST with a foreign Origin or none, and no task starts', async () => {
    const body = JSON.stringify({ description: 'cross-site task', workflow: '' });
    const headers = { Cookie: cookie, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
    const foreign = await request(`${server.origin}/api/tasks`, { method: 'POST', headers: { ...headers, Origin: 'http://evil.example' }, body });
    assert(foreign.status === 403, `a POST from http://evil.example answered ${foreign.status}, not 403`);
    assert(typeof JSON.parse(foreign.body).error === 'string', `the 403 is not {"error": …}: ${foreign.body}`);
    const none = await request(`${server.origin}/api/tasks`, { method: 'POST', headers, body });
    assert(none.status === 403, `a POST without Origin answered ${none.status}, not 403`);
    const otherPort = new URL(server.origin);
    otherPort.port = String(Number(otherPort.port) + 1);
    const port = await request(`${server.origin}/api/tasks`, { method: 'POST', headers: { ...headers, Origin: otherPort.origin }, body });
    assert(port.status === 403, `a POST from ${otherPort.origin} answered ${port.status}, not 403`);
    const tasks = await apiGet(server, cookie, '/api/tasks');
    assert(tasks.tasks.length === 0, `a refused POST started a task: ${JSON.stringify(tasks.tasks)}`);
  });
  await g.step('in the browser: the token leaves the address bar and the page loads', async () => {
    const context = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(server.url);
    await page.waitForURL(`${server.origin}/`, { timeout: STEP_MS }).catch(() => {});
    assert(page.url() === `${server.origin}/`, `the address is ${page.url()}, not ${server.origin}/`);
    await page.getByLabel('Description').waitFor({ timeout: STEP_MS });
    const cookies = await context.cookies();
    const c = cookies.find((x) => x.name === 'rawko_token');
    assert(c && c.httpOnly && c.sameSite === 'Strict', `the browser's cookie: ${JSON.stringify(c)}`);
    assert(!(await page.evaluate(() => document.cookie)).includes('rawko_token'), 'the page script can read the token');
  });
}

// ---------------------------------------------------------------------------------------------
// 2. A task started from the page
// ---------------------------------------------------------------------------------------------

async function pageTaskGroup(root, browser) {
  const g = group('page task');
  const space = makeWorkspace(root, 'page', WEB_SCRIPT);
  let server;
  let cookie;
  let page;
  let phone;
  let deny;
  let allow;
  const errors = [];
  const requests = [];
  await g.step('rawko web starts and the page loads at 1280×800 with the workflow to pick', async () => {
    server = await startWeb(space, path.join(ARTIFACTS, 'rawko-web.log'));
    cleanups.push(() => stopProcess(server.child));
    cookie = await signIn(server);
    const context = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
    page.on('request', (r) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`));
    await page.goto(server.url);
    await page.locator('#connection', { hasText: 'live' }).waitFor({ timeout: STEP_MS });
    await recordAnnouncements(page);
    await page.getByLabel('Workflow').locator('option', { hasText: 'Web Test' }).waitFor({ state: 'attached', timeout: STEP_MS });
    const options = await page.getByLabel('Workflow').locator('option').allTextContents();
    assert(options[0] === '(no workflow)', `the first option is ${options[0]}`);
    assert(options.includes('Web Test'), `the workflows offered: ${options.join(', ')}`);
    assert((await page.getByRole('button', { name: 'Start', exact: true }).count()) === 1, 'no Start button');
  }, () => page);
  await g.step('a refused start shows rawko\'s error in the alert line and starts nothing', async () => {
    // A workflow that went away after the page listed it.
    await page.getByLabel('Workflow').evaluate((select) => {
      const option = document.createElement('option');
      option.value = 'gone-workflow';
      option.textContent = 'Gone';
      select.append(option);
    });
    await page.getByLabel('Description').fill('A task of a workflow that is gone');
    await page.getByLabel('Workflow').selectOption('gone-workflow');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: /\S/ }).waitFor({ timeout: STEP_MS });
    const said = await alert.textContent();
    assert(/gone-workflow|workflow/i.test(said), `the alert says: ${said}`);
    const tasks = await apiGet(server, cookie, '/api/tasks');
    assert(tasks.tasks.length === 0, `a task started: ${JSON.stringify(tasks.tasks)}`);
    log(`  the alert line: ${said}`);
    // Chromium logs the refused request itself; that one is expected.
    errors.splice(0, errors.length, ...errors.filter((e) => !/Failed to load resource: .* 4\d\d/.test(e)));
  }, () => page);
  await g.step('start a task from the page: Description, Workflow, Start', async () => {
    await page.getByLabel('Description').fill('Add a --shout flag to greet');
    await page.getByLabel('Workflow').selectOption({ label: 'Web Test' });
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.locator('#task-list .task', { hasText: 'Add a --shout flag to greet' }).waitFor({ timeout: STEP_MS });
    const tasks = await apiGet(server, cookie, '/api/tasks');
    assert(tasks.tasks.length === 1 && tasks.tasks[0].workflow === 'webtest', `the tasks: ${JSON.stringify(tasks.tasks)}`);
  }, () => page);
  await g.step('the blocked Write in Plan shows at the top: tool, reason, summary, diff, countdown, buttons in order, none focused', async () => {
    deny = await waitForCard(page, 'DENIED.md');
    const c = card(page, deny);
    const shown = text(await c.innerText());
    assert(/Write/.test(shown), `no tool: ${shown}`);
    assert(/Write is blocked in the Plan phase/.test(shown), `no reason for people (detail): ${shown}`);
    const approvals = (await apiGet(server, cookie, '/api/approvals')).approvals;
    const a = approvals.find((x) => x.toolCallId === deny);
    assert(a, `the page's approval ${deny} is not among the server's: ${JSON.stringify(approvals)}`);
    assert(shown.includes(text(a.detail)), `the card lacks detail ${a.detail}`);
    assert(shown.includes(text(a.summary)), `the card lacks summary ${a.summary}`);
    const added = await c.locator('.diff .add').allTextContents();
    assert(added.some((l) => l.includes('this must not be written')), `the diff has no + line with the new text: ${added}`);
    assert(/denied in \d+:\d\d/.test(shown) || new RegExp(`${a.timeoutLabel} \\d+:\\d\\d`).test(shown), `no countdown: ${shown}`);
    const before = requests.length;
    const first = await c.locator('.timeout').textContent();
    await sleep(2100);
    const later = await c.locator('.timeout').textContent();
    assert(first !== later, `the countdown does not count: ${first} then ${later}`);
    const polled = requests.slice(before);
    assert(polled.length === 0, `the page asked the server while nothing happened (polling?): ${polled.join(', ')}`);
    const names = await c.getByRole('button').allTextContents();
    assert(JSON.stringify(names) === JSON.stringify(['Deny', 'Allow once', 'Always allow', 'Always deny']), `the buttons: ${JSON.stringify(names)}`);
    for (const name of ['Deny', 'Allow once', 'Always allow', 'Always deny']) {
      assert((await c.getByRole('button', { name, exact: true }).count()) === 1, `no button named ${name}`);
    }
    const focused = await page.evaluate(() => document.activeElement?.closest('.approval') !== null && document.activeElement?.tagName === 'BUTTON');
    assert(!focused, 'a button of the approval has the focus');
    const announced = await page.evaluate(() => {
      const region = document.querySelector('[aria-live="polite"]');
      return region ? `${window.__announced.join(' | ')} | ${region.textContent}` : 'no aria-live="polite" region';
    });
    assert(/DENIED\.md/.test(announced), `the live region did not announce the approval: ${announced}`);
  }, () => page);
  await g.step('the task list: "waiting on you", rawko\'s breadcrumb exactly, elapsed time; the output in plain words', async () => {
    const summary = (await apiGet(server, cookie, '/api/tasks')).tasks[0];
    const row = page.locator('#task-list .task', { hasText: 'Add a --shout flag to greet' });
    await row.locator('.state', { hasText: 'waiting on you' }).waitFor({ timeout: STEP_MS });
    const crumb = await row.locator('.crumb').textContent();
    assert(crumb === summary.breadcrumbText, `the breadcrumb is ${JSON.stringify(crumb)}, rawko's is ${JSON.stringify(summary.breadcrumbText)}`);
    assert(/Web Test > 📋 Plan \[1\/3\]/.test(crumb), `the breadcrumb: ${crumb}`);
    assert(/\d+s/.test(await row.locator('.elapsed').textContent()), 'no elapsed time');
    await page.locator('#output .call', { hasText: 'Write' }).first().waitFor({ timeout: STEP_MS });
    await page.locator('#output .say', { hasText: 'Planning first.' }).first().waitFor({ timeout: STEP_MS });
    const context = page.locator('#output details.context');
    if ((await context.count()) > 0) {
      assert((await context.first().locator('summary').textContent()) === 'Phase context sent to the agent', 'the context summary');
      assert(!(await context.first().evaluate((d) => d.open)), 'the phase context is open');
    }
    const visible = await page.locator('#output').innerText();
    assert(!visible.includes('Do this:'), `the output shows the text meant for the model: ${visible}`);
    for (const name of ['Cancel', 'Interrupt', 'Resume']) {
      assert((await page.getByRole('button', { name, exact: true }).count()) === 1, `no ${name} button`);
    }
    const enabled = {};
    for (const name of ['Cancel', 'Interrupt', 'Resume']) enabled[name] = await page.getByRole('button', { name, exact: true }).isEnabled();
    const actions = summary.actions || [];
    for (const [name, action] of [['Cancel', 'cancel'], ['Interrupt', 'interrupt'], ['Resume', 'resume']]) {
      assert(enabled[name] === actions.includes(action), `${name} is ${enabled[name] ? 'enabled' : 'disabled'} but actions are ${JSON.stringify(actions)}`);
    }
  }, () => page);
  await g.step('the phase tree: ▶ Plan, ○ Build, ○ Check', async () => {
    await waitForTree(page, [['▶', '📋 Plan'], ['○', '🛠️ Build'], ['○', '🔎 Check']], 'Plan current');
  }, () => page);
  await g.step('screenshots with the approval pending at 1280×800 and 390×844 (one column, nothing wider than the screen)', async () => {
    await screenshot(page, 'desk-1280x800');
    const layout = await page.evaluate(() => {
      const side = document.querySelector('.side').getBoundingClientRect();
      const detail = document.querySelector('.detail').getBoundingClientRect();
      return { sideRight: side.right, detailLeft: detail.left, sideTop: side.top, detailTop: detail.top };
    });
    assert(layout.detailLeft >= layout.sideRight - 1 && Math.abs(layout.detailTop - layout.sideTop) < 5, `at 1280×800 the task is not beside the list: ${JSON.stringify(layout)}`);
    const context = await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    phone = await context.newPage();
    await phone.goto(server.url);
    await card(phone, deny).waitFor({ timeout: STEP_MS });
    await screenshot(phone, 'phone-390x844');
    await phone.emulateMedia({ colorScheme: 'dark' });
    await screenshot(phone, 'phone-390x844-dark');
    await phone.emulateMedia({ colorScheme: 'light' });
    const phoneLayout = await phone.evaluate(() => {
      const side = document.querySelector('.side').getBoundingClientRect();
      const detail = document.querySelector('.detail').getBoundingClientRect();
      const buttons = [...document.querySelectorAll('.approval button')].map((b) => b.getBoundingClientRect());
      return {
        scrollWidth: document.documentElement.scrollWidth,
        sideLeft: side.left,
        detailLeft: detail.left,
        detailTop: detail.top,
        sideBottom: side.bottom,
        buttonsInside: buttons.every((r) => r.left >= 0 && r.right <= window.innerWidth && r.height >= 32),
        approvalTop: document.querySelector('.approval').getBoundingClientRect().top,
      };
    });
    assert(phoneLayout.scrollWidth <= 390, `the page is ${phoneLayout.scrollWidth}px wide at 390`);
    assert(phoneLayout.detailTop >= phoneLayout.sideBottom - 1, `at 390×844 the task is not below the list: ${JSON.stringify(phoneLayout)}`);
    assert(phoneLayout.buttonsInside, 'an approval button is outside the screen or too small to tap');
    assert(phoneLayout.approvalTop < 844, 'the approval is not on the first screen');
  }, () => page);
  await g.step('Deny in the page: the card goes, the file is not written, the tree moves on (✓ Plan, ▶ Build)', async () => {
    await card(page, deny).getByRole('button', { name: 'Deny', exact: true }).click();
    await card(page, deny).waitFor({ state: 'detached', timeout: STEP_MS });
    await card(phone, deny).waitFor({ state: 'detached', timeout: STEP_MS });
    await waitForTree(page, [['✓', '📋 Plan'], ['▶', '🛠️ Build'], ['○', '🔎 Check']], 'Build current');
    allow = await waitForCard(page, 'ALLOWED.md');
    assert(!fs.existsSync(path.join(space.ws, 'DENIED.md')), 'DENIED.md was written although the call was denied');
    const out = await page.locator('#output').innerText();
    assert(/✗/.test(out), `the output does not mark the refused call's result: ${out}`);
    const crumb = await page.locator('#task-list .task .crumb').first().textContent();
    assert(/Web Test > 🛠️ Build \[2\/3\]/.test(crumb), `the breadcrumb did not move: ${crumb}`);
  }, () => page);
  await g.step('Allow once in the page: the card goes and the file is on disk with its content', async () => {
    const c = card(page, allow);
    const shown = text(await c.innerText());
    assert(/Write is blocked in the Build phase/.test(shown), `the reason: ${shown}`);
    await c.getByRole('button', { name: 'Allow once', exact: true }).click();
    await c.waitFor({ state: 'detached', timeout: STEP_MS });
    await waitForFile(path.join(space.ws, 'ALLOWED.md'), 'written after the page allowed it\n', 'ALLOWED.md');
    const left = (await apiGet(server, cookie, '/api/approvals')).approvals;
    assert(left.length === 0, `approvals left: ${JSON.stringify(left)}`);
  }, () => page);
  await g.step('the task completes: "complete", every phase ✓, Cancel/Interrupt disabled', async () => {
    await page.locator('#task-list .task .state', { hasText: 'complete' }).waitFor({ timeout: STEP_MS });
    await waitForTree(page, [['✓', '📋 Plan'], ['✓', '🛠️ Build'], ['✓', '🔎 Check']], 'every phase done');
    assert(await page.getByRole('button', { name: 'Cancel', exact: true }).isDisabled(), 'Cancel is enabled on a finished task');
    assert(await page.getByRole('button', { name: 'Interrupt', exact: true }).isDisabled(), 'Interrupt is enabled on a finished task');
    const summary = (await apiGet(server, cookie, '/api/tasks')).tasks[0];
    assert(summary.state === 'complete', `rawko says ${summary.state}`);
    await screenshot(page, 'desk-complete');
  }, () => page);
  let second;
  await g.step('a second task: Interrupt while it waits on an approval withdraws it; Resume goes on', async () => {
    await page.getByLabel('Description').fill('A task to interrupt and cancel <b id="injected">as text</b>');
    await page.getByLabel('Workflow').selectOption({ label: 'Web Test' });
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const row = page.locator('#task-list .task', { hasText: 'A task to interrupt and cancel' });
    await row.waitFor({ timeout: STEP_MS });
    assert((await page.locator('#injected').count()) === 0, 'the description was inserted as HTML');
    assert((await row.locator('.desc').textContent()).endsWith('<b id="injected">as text</b>'), 'the description is not shown as typed');
    second = await waitForCard(page, 'DENIED.md');
    await waitUntil('Interrupt to be enabled', STEP_MS, () => page.getByRole('button', { name: 'Interrupt', exact: true }).isEnabled());
    await page.getByRole('button', { name: 'Interrupt', exact: true }).click();
    await card(page, second).waitFor({ state: 'detached', timeout: STEP_MS });
    await waitUntil('Resume to be enabled', STEP_MS, () => page.getByRole('button', { name: 'Resume', exact: true }).isEnabled());
    assert(!fs.existsSync(path.join(space.ws, 'DENIED.md')), 'the interrupted call was written');
    const state = await row.locator('.state').textContent();
    assert(state === 'waiting on you', `the interrupted task is "${state}"`);
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await waitUntil('the task to run again', STEP_MS, async () => (await row.locator('.state').textContent()) !== 'waiting on you' || (await page.locator('#approval-list .approval').count()) > 0);
  }, () => page);
  await g.step('Cancel ends it: "cancelled", its approvals gone, Cancel disabled', async () => {
    await waitUntil('Cancel to be enabled', STEP_MS, () => page.getByRole('button', { name: 'Cancel', exact: true }).isEnabled());
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const row = page.locator('#task-list .task', { hasText: 'A task to interrupt and cancel' });
    await row.locator('.state', { hasText: 'cancelled' }).waitFor({ timeout: STEP_MS });
    await waitUntil('no approval left', STEP_MS, async () => (await page.locator('#approval-list .approval').count()) === 0);
    assert(await page.getByRole('button', { name: 'Cancel', exact: true }).isDisabled(), 'Cancel is enabled on a cancelled task');
    const pending = (await apiGet(server, cookie, '/api/approvals')).approvals;
    assert(pending.length === 0, `approvals left: ${JSON.stringify(pending)}`);
    assert(errors.length === 0, `the page logged errors: ${errors.join('; ')}`);
  }, () => page);
}

// ---------------------------------------------------------------------------------------------
// 3. An editor attached: Neovim with the plugin, `rawko serve --web`
// ---------------------------------------------------------------------------------------------

/** Evaluates Lua `expr` (returning a JSON-encodable value) in the Neovim at `sock`. */
function nvimEval(sock, expr) {
  const lua = `vim.json.encode((function() ${expr} end)())`;
  const res = spawnSync(NVIM, ['--headless', '--clean', '--server', sock, '--remote-expr', `luaeval('${lua.replace(/'/g, "''")}')`], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (res.status !== 0) throw new Error(`nvim --remote-expr failed (${res.status}): ${res.stderr}`);
  return JSON.parse(res.stdout.trim() || 'null');
}

/** The approvals Neovim's plugin asks now: the one shown and those queued. */
const NVIM_QUESTIONS = `
  local p = require('rawko.prompt')
  local list = {}
  local active = p.active()
  if active and active.kind == 'approval' then table.insert(list, active.tool_call_id) end
  return { questions = list, waiting = p.waiting(), asked = #_G.web_test.selects, selects = _G.web_test.selects, messages = _G.web_test.messages, notes = _G.web_test.notes, tasks = vim.tbl_count(require("rawko.state").tasks) }`;

async function editorGroup(root, browser) {
  const g = group('editor');
  if (!NVIM || !fs.existsSync(NVIM)) {
    await g.step('Neovim is there (RAWKO_NVIM)', () => {
      throw new Error(`RAWKO_NVIM is ${JSON.stringify(NVIM)}: scripts/test-web.sh installs Neovim 0.11.4`);
    });
    return;
  }
  const space = makeWorkspace(root, 'editor', EDITOR_SCRIPT);
  const sock = path.join(root, 'editor', 'nvim.sock');
  const serverLog = path.join(ARTIFACTS, 'rawko-serve-web.log');
  const urlFile = path.join(root, 'editor', 'web-url');
  fs.rmSync(serverLog, { force: true });
  const init = path.join(root, 'editor', 'init.lua');
  const env = { ...space.env, RAWKO_WEB_URL_FILE: urlFile };
  const serverEnv = Object.fromEntries(
    ['HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME', 'XDG_CACHE_HOME', 'XDG_RUNTIME_DIR', 'PI_CODING_AGENT_DIR', 'RAWKO_LOG', 'RAWKO_WEB_URL_FILE'].map((k) => [k, env[k]]),
  );
  fs.writeFileSync(
    init,
    `-- The stand-in user of the web test: the plugin as a user loads it, rawko started as
-- \`rawko serve --web 127.0.0.1:0\` (its stderr kept in a file, where the URL line is), and
-- questions recorded but never answered in Neovim: the page answers them.
vim.opt.runtimepath:prepend(${JSON.stringify(path.join(REPO, 'editors/nvim'))})
vim.cmd.runtime('plugin/rawko.lua')
_G.web_test = { selects = {}, notes = {}, messages = {} }
vim.ui.select = function(items, opts, on_choice)
  local kind = opts and opts.kind
  table.insert(_G.web_test.selects, { kind = kind, prompt = opts and opts.prompt })
  if kind == 'rawko_message' then
    -- rawko's offer to open its page: kept, and dismissed as a user at a desk without a
    -- browser would (the questions behind it wait until then).
    local asked = require('rawko.prompt').active()
    table.insert(_G.web_test.messages, table.concat(asked and asked.lines or {}, '\\n'))
    vim.schedule(function()
      for _, item in ipairs(items) do
        if (opts.format_item and opts.format_item(item) or tostring(item)):find('Dismiss', 1, true) then
          return on_choice(item)
        end
      end
      on_choice(nil)
    end)
  end
end
vim.ui.input = function(_, on_confirm) on_confirm('Write the plan from the editor') end
vim.notify = function(message) table.insert(_G.web_test.notes, tostring(message)) end
vim.g.rawko = {
  bin = ${JSON.stringify(RAWKO_BIN)},
  task = { provider = 'scripted', script = ${JSON.stringify(space.script)} },
  output = { open_on_start = false },
}
vim.lsp.config('rawko', {
  cmd = { '/bin/sh', '-c', 'exec "$0" serve --web 127.0.0.1:0 2>>"$1"', ${JSON.stringify(RAWKO_BIN)}, ${JSON.stringify(serverLog)} },
  cmd_env = vim.json.decode(${JSON.stringify(JSON.stringify(serverEnv))}),
})
vim.cmd.cd(vim.fn.fnameescape(${JSON.stringify(space.ws)}))
`,
  );
  let nvim;
  let server;
  let page;
  let tool;
  const ok = await g.step('headless Neovim with the plugin starts a task; rawko serve --web prints its URL', async () => {
    nvim = spawn(NVIM, ['--headless', '--clean', '--listen', sock, '-c', `luafile ${init}`], {
      cwd: space.ws,
      env,
      detached: true,
      stdio: ['ignore', 'ignore', fs.openSync(path.join(ARTIFACTS, 'nvim.log'), 'w')],
    });
    cleanups.push(async () => {
      try {
        nvimEval(sock, "for _, c in ipairs(vim.lsp.get_clients({ name = 'rawko' })) do c:stop(true) end return true");
      } catch {
        // Neovim is gone already.
      }
      await sleep(300);
      await stopProcess(nvim);
    });
    await waitUntil('Neovim to listen', STEP_MS, () => fs.existsSync(sock) && nvimEval(sock, 'return 1') === 1);
    assert(nvimEval(sock, 'return _G.web_test ~= nil'), `Neovim did not run ${init}: ${fs.readFileSync(path.join(ARTIFACTS, 'nvim.log'), 'utf8')}`);
    nvimEval(sock, "vim.schedule(function() vim.cmd('Rawko start webtest') end) return true");
    const line = await waitUntil('the URL line of rawko serve --web', STEP_MS, () => {
      const found = fs.existsSync(serverLog) && fs.readFileSync(serverLog, 'utf8').match(/^rawko web: https?:\/\/\S+$/m);
      if (found) return found[0];
      if (fs.existsSync(urlFile)) {
        const url = fs.readFileSync(urlFile, 'utf8').trim();
        if (url) return `rawko web: ${url}`;
      }
      return null;
    });
    server = parseUrlLine(line);
    const told = await waitUntil('rawko to offer its page to Neovim', STEP_MS, () => {
      const messages = nvimEval(sock, 'return _G.web_test.messages');
      return messages.find((m) => m.includes(new URL(server.origin).host));
    }).catch((error) => {
      throw new Error(`${error.message}; Neovim was told: ${JSON.stringify(nvimEval(sock, NVIM_QUESTIONS))}`);
    });
    log(`  Neovim was told: ${told.replace(/token=[0-9a-f]+/g, 'token=…')}`);
  });
  if (!ok) return;
  await g.step('the blocked Write is asked in Neovim and shown in the page, the same call', async () => {
    const context = await newContext(browser, { viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    await page.goto(server.url);
    tool = await waitForCard(page, 'EDITOR.md');
    let seen = null;
    const asked = await waitUntil('Neovim to ask about the Write', STEP_MS, () => {
      seen = nvimEval(sock, NVIM_QUESTIONS);
      return seen.questions.length > 0 ? seen : null;
    }).catch((error) => {
      throw new Error(`${error.message}; Neovim has ${JSON.stringify(seen)}`);
    });
    assert(asked.questions[0] === tool, `Neovim asks about ${asked.questions[0]}, the page about ${tool}`);
    const row = page.locator('#task-list .task', { hasText: 'Write the plan from the editor' });
    await row.waitFor({ timeout: STEP_MS });
    await screenshot(page, 'editor-approval-in-page');
  }, () => page);
  await g.step('answered in the page: it leaves Neovim\'s questions and the page, and the file is written', async () => {
    await card(page, tool).getByRole('button', { name: 'Allow once', exact: true }).click();
    await card(page, tool).waitFor({ state: 'detached', timeout: STEP_MS });
    await waitUntil('Neovim to drop the question', STEP_MS, () => {
      const q = nvimEval(sock, NVIM_QUESTIONS);
      return q.questions.length === 0 && q.waiting === 0;
    });
    await waitForFile(path.join(space.ws, 'EDITOR.md'), 'allowed from the page\n', 'EDITOR.md');
    const again = await page.evaluate(() => document.querySelectorAll('#approval-list .approval').length);
    assert(again === 0, `the page still shows ${again} approval(s)`);
  }, () => page);
}

// ---------------------------------------------------------------------------------------------

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  for (const old of fs.readdirSync(ARTIFACTS)) {
    if (/\.(png|log)$/.test(old)) fs.rmSync(path.join(ARTIFACTS, old), { force: true });
  }
  log(`rawko: ${RAWKO_BIN}`);
  const root = tempRoot('rawko-web-test-');
  let browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    // RAWKO_WEB_ONLY=auth,page,editor runs only those groups (when trying one out).
    const only = (process.env.RAWKO_WEB_ONLY || '').split(',').filter(Boolean);
    const groups = { auth: authGroup, page: pageTaskGroup, editor: editorGroup };
    for (const [key, run] of Object.entries(groups)) {
      if (only.length && !only.includes(key)) continue;
      try {
        await run(root, browser);
      } catch (error) {
        results.push({ name: `${run.name}`, ok: false });
        log(`not ok - ${run.name}: ${error.stack || error}`);
      }
    }
  } catch (error) {
    results.push({ name: 'launch chromium', ok: false });
    log(`not ok - launch chromium (${CHROMIUM}): ${error.stack || error}`);
  } finally {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log(`cleanup: ${error.message}`);
      }
    }
    await browser?.close().catch(() => {});
    fs.rmSync(root, { recursive: true, force: true });
  }
  const passed = results.filter((r) => r.ok).length;
  const failed = results.length - passed;
  for (const r of results.filter((x) => !x.ok)) log(`failed: ${r.name}`);
  log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
