// rawko's web face: the tasks of a workspace, their phases and live output, and the approvals
// that wait for an answer. Plain JavaScript with no build step and no network beyond this
// server. Live state comes from the server's event stream (/api/events) only; after every
// (re)connection the page fetches the lists again, so nothing missed while away stays stale.
// Text from the server goes in with textContent only.
'use strict';

(function () {
  /** Answers to an approval, in the order the buttons show them: the refusal first. */
  const CHOICES = [
    ['reject_once', 'Deny'],
    ['allow_once', 'Allow once'],
    ['allow_always', 'Always allow'],
    ['reject_always', 'Always deny'],
  ];
  /** How much output the page keeps per task (the server keeps as much). */
  const OUTPUT_KEEP = 500;
  /** The line diff gives up on the longest common subsequence past this many cells. */
  const DIFF_CELLS = 250000;
  /** The most diff lines shown per file. */
  const DIFF_LINES = 400;

  const $ = (id) => document.getElementById(id);

  /** taskId → TaskSummary (or TaskDetail fields) as last heard. */
  const tasks = new Map();
  /** "taskId\u0000toolCallId" → Approval. */
  const approvals = new Map();
  /** taskId → output entries, by seq. */
  const outputs = new Map();
  /** taskId → the countdown text while it runs. */
  const countdowns = new Map();
  /** taskId → the last `status` event's phaseIndex and phasesDone (newer than any snapshot). */
  const progress = new Map();
  let selected = null;
  /** The selected task's phase tree (PhaseNode[]), as getTask gave it. */
  let phases = [];
  let workflowsLoaded = false;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function approvalKey(taskId, toolCallId) {
    return taskId + '\u0000' + toolCallId;
  }

  // ---------------------------------------------------------------------------------------------
  // The server
  // ---------------------------------------------------------------------------------------------

  async function api(method, path, body) {
    const options = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      options.headers['Content-Type'] = 'application/json';
      options.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, options);
    } catch (e) {
      throw new Error('rawko cannot be reached: ' + (e && e.message ? e.message : String(e)));
    }
    let data = null;
    const text = await response.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_) {
        data = null;
      }
    }
    if (!response.ok) {
      let message = data && typeof data.error === 'string' ? data.error : response.status + ' ' + response.statusText;
      if (response.status === 401) message = 'not signed in: open the address rawko printed (with its ?token=)';
      const error = new Error(message);
      error.status = response.status;
      throw error;
    }
    return data || {};
  }

  function showError(message) {
    $('status').textContent = message;
  }

  function clearError() {
    $('status').textContent = '';
  }

  function seg(value) {
    return encodeURIComponent(String(value));
  }

  // ---------------------------------------------------------------------------------------------
  // Words and times
  // ---------------------------------------------------------------------------------------------

  function waitsOnUser(task) {
    for (const a of approvals.values()) if (a.taskId === task.taskId) return true;
    return task.state === 'waiting_approval' || task.state === 'blocked';
  }

  /** The state in words, and the class that colours it. */
  function stateWords(task) {
    switch (task.state) {
      case 'complete':
        return ['complete', 'complete'];
      case 'failed':
        return ['failed', 'failed'];
      case 'cancelled':
        return ['cancelled', 'cancelled'];
      case 'interrupted':
        return waitsOnUser(task) ? ['waiting on you', 'waiting'] : ['interrupted', 'waiting'];
      default:
        if (waitsOnUser(task)) return ['waiting on you', 'waiting'];
        if (task.stateClass === 'finished') return [String(task.state || 'finished'), 'cancelled'];
        return ['running', 'running'];
    }
  }

  function isFinished(task) {
    return task.stateClass === 'finished' || ['complete', 'failed', 'cancelled'].includes(task.state);
  }

  function startedAt(task) {
    return Number(task.startedAt != null ? task.startedAt : task.createdAt) || 0;
  }

  function elapsedMs(task) {
    const start = startedAt(task);
    if (!start) return null;
    const end = isFinished(task) ? Number(task.updatedAt || task.finishedAt || Date.now()) : Date.now();
    return Math.max(0, end - start);
  }

  function duration(ms) {
    if (ms == null) return '';
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + String(s % 60).padStart(2, '0') + 's';
    return Math.floor(m / 60) + 'h ' + String(m % 60).padStart(2, '0') + 'm';
  }

  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return Math.floor(s / 60) + ':' + String(s % 60).padStart(2, '0');
  }

  function elapsedText(task) {
    const ms = elapsedMs(task);
    return ms == null ? '' : (isFinished(task) ? 'took ' : 'for ') + duration(ms);
  }

  // ---------------------------------------------------------------------------------------------
  // The task list
  // ---------------------------------------------------------------------------------------------

  function sortedTasks() {
    return [...tasks.values()].sort((a, b) => startedAt(b) - startedAt(a));
  }

  function renderTasks() {
    const list = $('task-list');
    const rows = [];
    for (const task of sortedTasks()) {
      const li = el('li');
      li.dataset.taskId = task.taskId;
      const button = el('button', 'task');
      button.type = 'button';
      button.dataset.taskId = task.taskId;
      button.setAttribute('aria-current', task.taskId === selected ? 'true' : 'false');
      button.append(el('span', 'desc', task.description || task.taskId));
      const meta = el('span', 'meta');
      const [words, cls] = stateWords(task);
      meta.append(el('span', 'state ' + cls, words));
      meta.append(el('span', 'crumb', task.breadcrumbText || ''));
      meta.append(el('span', 'elapsed', elapsedText(task)));
      button.append(meta);
      button.addEventListener('click', () => select(task.taskId));
      li.append(button);
      rows.push(li);
    }
    // Rows are rebuilt; the keyboard's place among them is kept.
    const focused = list.contains(document.activeElement) ? document.activeElement.dataset.taskId : null;
    list.replaceChildren(...rows);
    if (focused) list.querySelector(`.task[data-task-id="${CSS.escape(focused)}"]`)?.focus();
    $('tasks-empty').hidden = rows.length > 0;
  }

  function updateTask(fields) {
    if (!fields || !fields.taskId) return;
    const old = tasks.get(fields.taskId) || {};
    const merged = Object.assign({}, old);
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) merged[k] = v;
    tasks.set(fields.taskId, merged);
  }

  async function loadTasks() {
    const data = await api('GET', '/api/tasks');
    const seen = new Set();
    for (const t of data.tasks || []) {
      seen.add(t.taskId);
      updateTask(t);
    }
    for (const id of [...tasks.keys()]) if (!seen.has(id)) tasks.delete(id);
    renderTasks();
    renderDetailHeader();
    // Someone who opens the page follows the newest task that is still going, unless they chose.
    if (!selected) {
      const first = sortedTasks().find((t) => !isFinished(t));
      if (first) select(first.taskId);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The selected task
  // ---------------------------------------------------------------------------------------------

  async function select(taskId) {
    selected = taskId;
    phases = [];
    renderTasks();
    $('detail-empty').hidden = true;
    $('detail-body').hidden = false;
    renderDetailHeader();
    renderPhases();
    renderOutput();
    await loadDetail(taskId);
  }

  async function loadDetail(taskId) {
    let data;
    try {
      data = await api('GET', '/api/tasks/' + seg(taskId));
    } catch (e) {
      showError('cannot load the task: ' + e.message);
      return;
    }
    if (selected !== taskId) return;
    if (data.task) {
      updateTask(data.task);
      phases = Array.isArray(data.task.phases) ? data.task.phases : [];
      // A status event that came while the snapshot was on its way is newer than it.
      if (progress.has(taskId)) applyProgress(progress.get(taskId));
    }
    for (const entry of data.output || []) addOutput(entry, false);
    for (const a of data.approvals || []) addApproval(a, false);
    renderTasks();
    renderDetailHeader();
    renderPhases();
    renderOutput();
    renderApprovals();
  }

  function renderDetailHeader() {
    const task = selected ? tasks.get(selected) : null;
    if (!task) return;
    $('detail-description').textContent = task.description || task.taskId;
    const [words, cls] = stateWords(task);
    const state = $('detail-state');
    state.textContent = words;
    state.className = 'state ' + cls;
    $('detail-breadcrumb').textContent = task.breadcrumbText || '';
    $('detail-elapsed').textContent = elapsedText(task);
    const actions = Array.isArray(task.actions) ? task.actions : [];
    for (const button of document.querySelectorAll('.actions button[data-action]')) {
      button.disabled = !actions.includes(button.dataset.action);
    }
    const countdown = countdowns.get(task.taskId);
    $('detail-countdown').hidden = !countdown;
    $('detail-countdown').textContent = countdown || '';
    let waiting = 0;
    for (const a of approvals.values()) if (a.taskId === task.taskId) waiting += 1;
    $('detail-approvals').hidden = waiting === 0;
    $('detail-approvals').textContent =
      waiting === 1 ? 'A tool call waits for your answer (above).' : waiting + ' tool calls wait for your answer (above).';
  }

  /** Re-derives the phases' status from a `status` event's phaseIndex/phasesDone. */
  function applyProgress(status) {
    if (!phases.length || status.phasesDone === undefined || status.phasesDone === null) return;
    const done = Number(status.phasesDone);
    const current = status.phaseIndex === undefined || status.phaseIndex === null ? null : Number(status.phaseIndex);
    for (const node of phases) {
      if (node.kind !== 'scope' && node.index !== undefined && node.index !== null) {
        node.status = node.index === current ? 'current' : node.index < done ? 'done' : 'todo';
      }
    }
    // A scope is current while one of its phases is, done when all are.
    for (let i = phases.length - 1; i >= 0; i--) {
      const node = phases[i];
      if (node.kind !== 'scope') continue;
      const inside = [];
      for (let j = i + 1; j < phases.length && phases[j].depth > node.depth; j++) inside.push(phases[j]);
      if (inside.some((n) => n.status === 'current')) node.status = 'current';
      else if (inside.length && inside.every((n) => n.status === 'done')) node.status = 'done';
      else node.status = 'todo';
    }
  }

  function renderPhases() {
    const list = $('phase-tree');
    const items = phases.map((node) => {
      const status = node.status || 'todo';
      const li = el('li', status + (node.kind === 'scope' ? ' scope' : ''));
      li.style.paddingLeft = (Number(node.depth) || 0) * 1.4 + 'em';
      const mark = status === 'done' ? '✓' : status === 'current' ? '▶' : '○';
      if (status === 'current') li.setAttribute('aria-current', 'step');
      li.append(el('span', 'mark', mark), ' ');
      li.append(el('span', 'name', (node.emoji ? node.emoji + ' ' : '') + node.name));
      li.append(el('span', 'sr-only', status === 'done' ? ' (done)' : status === 'current' ? ' (current)' : ' (to do)'));
      return li;
    });
    list.replaceChildren(...items);
    const task = selected ? tasks.get(selected) : null;
    $('phases-empty').hidden = items.length > 0 || !task;
  }

  // ---------------------------------------------------------------------------------------------
  // Output
  // ---------------------------------------------------------------------------------------------

  function addOutput(entry, live) {
    if (!entry || !entry.taskId) return;
    let list = outputs.get(entry.taskId);
    if (!list) outputs.set(entry.taskId, (list = []));
    if (entry.seq != null && list.some((e) => e.seq === entry.seq && e.kind === entry.kind)) return;
    list.push(entry);
    if (entry.seq != null && list.length > 1 && list[list.length - 2].seq > entry.seq) {
      list.sort((a, b) => (a.seq || 0) - (b.seq || 0));
      live = false;
    }
    if (list.length > OUTPUT_KEEP) list.splice(0, list.length - OUTPUT_KEEP);
    if (entry.taskId === selected) {
      if (live) appendOutputNode(entry);
      else renderOutputSoon();
    }
  }

  let outputTimer = null;
  function renderOutputSoon() {
    if (outputTimer) return;
    outputTimer = setTimeout(() => {
      outputTimer = null;
      renderOutput();
    }, 0);
  }

  function renderOutput() {
    const box = $('output');
    box.replaceChildren();
    for (const entry of outputs.get(selected) || []) appendOutputNode(entry, true);
    box.scrollTop = box.scrollHeight;
  }

  function firstLines(text, lines, chars) {
    const all = String(text || '').split('\n');
    let shown = all.slice(0, lines).join('\n');
    let cut = all.length > lines;
    if (shown.length > chars) {
      shown = shown.slice(0, chars);
      cut = true;
    }
    return cut ? shown + ' …' : shown;
  }

  function shortInput(input) {
    if (input === undefined || input === null) return '';
    let text;
    try {
      text = typeof input === 'string' ? input : JSON.stringify(input);
    } catch (_) {
      text = String(input);
    }
    if (!text || text === '{}') return '';
    return text.length > 80 ? text.slice(0, 80) + '…' : text;
  }

  function labelled(className, label, text) {
    const p = el('p', className);
    p.append(el('span', 'label', label + ': '), document.createTextNode(String(text || '')));
    return p;
  }

  function appendOutputNode(entry, batch) {
    const box = $('output');
    const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    const text = entry.text == null ? '' : String(entry.text);
    let node = null;
    switch (entry.kind) {
      case 'assistant_delta': {
        const last = box.lastElementChild;
        if (last && last.classList.contains('say')) {
          last.textContent += text;
        } else {
          node = el('p', 'say', text);
        }
        break;
      }
      case 'tool_call': {
        node = el('p', 'call');
        const summary = text || entry.tool || 'tool';
        node.append(document.createTextNode('→ ' + summary));
        const args = shortInput(entry.input);
        if (args && !summary.includes(args)) node.append(' ', el('span', 'args', args));
        break;
      }
      case 'tool_result':
        node = el('p', 'result' + (entry.isError ? ' error' : ''));
        node.textContent = (entry.isError ? '✗ error: ' : '← ') + (firstLines(text, 3, 300) || (entry.isError ? 'failed' : 'done'));
        break;
      case 'context_injected': {
        node = el('details', 'context');
        node.append(el('summary', null, 'Phase context sent to the agent'));
        node.append(el('pre', null, text));
        break;
      }
      case 'reminder':
        node = labelled('reminder', 'Reminder', text);
        break;
      case 'hook_output':
        node = labelled('hook', 'Hook', text);
        break;
      case 'completion':
        // The completion message is Markdown; its emphasis marks are not words.
        node = labelled('completion', 'Completed', text.replace(/\*\*|__/g, ''));
        break;
      case 'error':
        node = labelled('error', 'Error', text);
        break;
      case 'handoff':
        node = labelled('handoff', 'Handoff', text);
        break;
      case 'subagent':
        node = labelled('handoff', 'Subagent', text);
        break;
      case 'event':
        node = el('p', 'event', text);
        break;
      default:
        node = labelled('event', String(entry.kind || 'output'), text);
    }
    if (node) box.append(node);
    if (!batch && atEnd) box.scrollTop = box.scrollHeight;
  }

  /** A line of the page's own (an answer, the end of a task) in the task's output. */
  function note(taskId, text) {
    // Placed right after the last entry, so that a later sort by seq keeps it there.
    const list = outputs.get(taskId) || [];
    const last = list.length ? Number(list[list.length - 1].seq) || 0 : 0;
    addOutput({ taskId, kind: 'event', text, seq: last + 0.5 }, true);
  }

  // ---------------------------------------------------------------------------------------------
  // Approvals
  // ---------------------------------------------------------------------------------------------

  function addApproval(a, announce) {
    if (!a || !a.taskId || !a.toolCallId) return;
    const key = approvalKey(a.taskId, a.toolCallId);
    const isNew = !approvals.has(key);
    approvals.set(key, a);
    if (isNew && announce) {
      const what = a.summary || a.tool || 'a tool call';
      const task = a.taskDescription || (tasks.get(a.taskId) || {}).description || '';
      $('announcer').textContent = 'Approval needed: ' + what + (task ? ' (task: ' + task + ')' : '');
    }
  }

  function removeApproval(taskId, toolCallId) {
    const key = approvalKey(taskId, toolCallId);
    if (!approvals.delete(key)) return false;
    const card = cards.get(key);
    if (card) card.remove();
    cards.delete(key);
    return true;
  }

  async function loadApprovals() {
    const data = await api('GET', '/api/approvals');
    const seen = new Set();
    for (const a of data.approvals || []) {
      seen.add(approvalKey(a.taskId, a.toolCallId));
      addApproval(a, true);
    }
    for (const [key, a] of [...approvals.entries()]) if (!seen.has(key)) removeApproval(a.taskId, a.toolCallId);
    renderApprovals();
  }

  /** key → its card element, so a card is built once and keeps its buttons (and focus). */
  const cards = new Map();

  function renderApprovals() {
    const list = $('approval-list');
    const ordered = [...approvals.entries()].sort((x, y) => Number(x[1].expiresAt || 0) - Number(y[1].expiresAt || 0));
    for (const [key, a] of ordered) {
      if (!cards.has(key)) cards.set(key, buildCard(a));
    }
    for (const [key, card] of [...cards.entries()]) {
      if (!approvals.has(key)) {
        card.remove();
        cards.delete(key);
      }
    }
    // Keep the order without moving cards that are in place (a moved node loses focus).
    let previous = null;
    for (const [key] of ordered) {
      const card = cards.get(key);
      const wanted = previous ? previous.nextSibling : list.firstChild;
      if (wanted !== card) list.insertBefore(card, wanted);
      previous = card;
    }
    $('approvals').hidden = approvals.size === 0;
    tickCountdowns();
    renderTasks();
    renderDetailHeader();
  }

  let cardCounter = 0;
  function buildCard(a) {
    cardCounter += 1;
    const id = 'approval-' + cardCounter;
    const card = el('article', 'approval');
    card.dataset.taskId = a.taskId;
    card.dataset.toolCallId = a.toolCallId;
    card.setAttribute('aria-labelledby', id + '-title');
    const title = el('h3', null, (a.tool || 'Tool') + (a.phase ? ' — blocked in ' + a.phase : ''));
    title.id = id + '-title';
    card.append(title);
    const taskText = a.taskDescription || (tasks.get(a.taskId) || {}).description;
    if (taskText) {
      const of = el('p', 'task-of');
      of.append('Task: ');
      const link = el('a', null, taskText);
      link.href = '#';
      link.addEventListener('click', (event) => {
        event.preventDefault();
        select(a.taskId);
        $('detail').scrollIntoView({ block: 'start' });
      });
      of.append(link);
      card.append(of);
    }
    card.append(el('p', 'reason', a.detail || a.reason || ''));
    if (a.summary) card.append(el('p', 'summary', a.summary));
    const changes = Array.isArray(a.changes) ? a.changes : [];
    if (changes.length) {
      for (const change of changes) card.append(renderDiff(change));
    } else {
      const input = inputText(a.input);
      if (input) card.append(el('pre', 'input', input));
    }
    const timeout = el('p', 'timeout');
    timeout.dataset.expiresAt = String(a.expiresAt || '');
    timeout.dataset.label = a.timeoutLabel || 'denied in';
    if (a.timeoutText) timeout.title = a.timeoutText;
    card.append(timeout);
    const choices = el('div', 'choices');
    choices.setAttribute('role', 'group');
    choices.setAttribute('aria-label', 'Answer');
    const offered = Array.isArray(a.options) && a.options.length ? a.options : CHOICES.map((c) => c[0]);
    for (const [outcome, label] of CHOICES) {
      const button = el('button', null, label);
      button.type = 'button';
      button.dataset.outcome = outcome;
      button.disabled = !offered.includes(outcome);
      button.addEventListener('click', () => answer(a, outcome, card));
      choices.append(button);
    }
    card.append(choices);
    return card;
  }

  function inputText(input) {
    if (input === undefined || input === null) return '';
    let text;
    try {
      text = typeof input === 'string' ? input : JSON.stringify(input, null, 2);
    } catch (_) {
      text = String(input);
    }
    return firstLines(text, 20, 2000);
  }

  async function answer(a, outcome, card) {
    const buttons = card.querySelectorAll('button');
    for (const b of buttons) b.disabled = true;
    try {
      await api('POST', '/api/tasks/' + seg(a.taskId) + '/approvals/' + seg(a.toolCallId), { outcome });
      clearError();
      removeApproval(a.taskId, a.toolCallId);
      renderApprovals();
    } catch (e) {
      if (e.status === 409) {
        removeApproval(a.taskId, a.toolCallId);
        renderApprovals();
      } else {
        const offered = Array.isArray(a.options) && a.options.length ? a.options : CHOICES.map((c) => c[0]);
        for (const b of buttons) b.disabled = !offered.includes(b.dataset.outcome);
      }
      showError(e.message);
    }
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const node of document.querySelectorAll('.approval .timeout')) {
      const at = Number(node.dataset.expiresAt);
      node.textContent = at ? node.dataset.label + ' ' + clock(at - now) : node.title || '';
    }
  }

  // ---------------------------------------------------------------------------------------------
  // A small line diff
  // ---------------------------------------------------------------------------------------------

  function splitLines(text) {
    if (text === null || text === undefined || text === '') return [];
    const lines = String(text).split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines;
  }

  /** The diff of two line lists as [' '|'-'|'+', line] pairs: common ends trimmed, then the
   * longest common subsequence of the middle, or all of it removed and added when that is too big. */
  function lineDiff(a, b) {
    let start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) start++;
    let endA = a.length;
    let endB = b.length;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
      endA--;
      endB--;
    }
    const out = [];
    for (let i = 0; i < start; i++) out.push([' ', a[i]]);
    const x = a.slice(start, endA);
    const y = b.slice(start, endB);
    if (x.length * y.length > DIFF_CELLS) {
      for (const l of x) out.push(['-', l]);
      for (const l of y) out.push(['+', l]);
    } else {
      const n = x.length;
      const m = y.length;
      const w = m + 1;
      const lcs = new Uint32Array((n + 1) * w);
      for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
          lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
        }
      }
      let i = 0;
      let j = 0;
      while (i < n && j < m) {
        if (x[i] === y[j]) {
          out.push([' ', x[i]]);
          i++;
          j++;
        } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
          out.push(['-', x[i++]]);
        } else {
          out.push(['+', y[j++]]);
        }
      }
      while (i < n) out.push(['-', x[i++]]);
      while (j < m) out.push(['+', y[j++]]);
    }
    for (let i = endA; i < a.length; i++) out.push([' ', a[i]]);
    return out;
  }

  /** Only the changed lines and three lines around them. */
  function hunks(diff) {
    const keep = new Array(diff.length).fill(false);
    diff.forEach(([op], i) => {
      if (op !== ' ') for (let k = Math.max(0, i - 3); k <= Math.min(diff.length - 1, i + 3); k++) keep[k] = true;
    });
    const out = [];
    let skipped = 0;
    diff.forEach((line, i) => {
      if (keep[i]) {
        if (skipped) out.push(['…', skipped]);
        skipped = 0;
        out.push(line);
      } else skipped++;
    });
    if (skipped) out.push(['…', skipped]);
    return out;
  }

  function renderDiff(change) {
    const box = el('div', 'diff');
    const isNew = change.oldText === null || change.oldText === undefined;
    box.append(el('p', 'path', (change.path || '') + (isNew ? ' (new file)' : '')));
    const pre = el('pre');
    const lines = hunks(lineDiff(splitLines(change.oldText), splitLines(change.newText)));
    let shown = 0;
    for (const [op, text] of lines) {
      if (shown >= DIFF_LINES) {
        pre.append(el('span', 'ln more', '… ' + (lines.length - shown) + ' more lines'));
        break;
      }
      shown++;
      if (op === '…') {
        pre.append(el('span', 'ln more', '… ' + text + ' unchanged line' + (text === 1 ? '' : 's')));
      } else if (op === '-') {
        pre.append(el('span', 'ln del', '− ' + text));
      } else if (op === '+') {
        pre.append(el('span', 'ln add', '+ ' + text));
      } else {
        pre.append(el('span', 'ln', '  ' + text));
      }
    }
    if (!lines.length) pre.append(el('span', 'ln more', 'no change'));
    box.append(pre);
    return box;
  }

  // ---------------------------------------------------------------------------------------------
  // Starting tasks and acting on them
  // ---------------------------------------------------------------------------------------------

  async function loadInfo() {
    const info = await api('GET', '/api/info');
    $('workspace').textContent = info.workspace || '';
    if (info.workspace) document.title = 'rawko — ' + String(info.workspace).split('/').filter(Boolean).pop();
    const select = $('start-workflow');
    const chosen = select.value;
    const options = [el('option', null, '(no workflow)')];
    options[0].value = '';
    for (const w of info.workflows || []) {
      if (w.show && w.show !== 'user') continue;
      const option = el('option', null, w.name || w.key);
      option.value = w.key;
      options.push(option);
    }
    select.replaceChildren(...options);
    if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
    workflowsLoaded = true;
  }

  async function startTask(event) {
    event.preventDefault();
    const description = $('start-description').value.trim();
    if (!description) {
      showError('describe the task first');
      $('start-description').focus();
      return;
    }
    const button = $('start-button');
    button.disabled = true;
    try {
      const result = await api('POST', '/api/tasks', { description, workflow: $('start-workflow').value });
      clearError();
      $('start-description').value = '';
      if (result.taskId && result.note) note(result.taskId, result.note);
      if (result.taskId) {
        if (!tasks.has(result.taskId)) {
          updateTask({ taskId: result.taskId, description, state: 'running', stateClass: 'busy', breadcrumbText: '', startedAt: Date.now(), actions: [] });
        }
        await select(result.taskId);
      }
    } catch (e) {
      showError('cannot start the task: ' + e.message);
    } finally {
      button.disabled = false;
    }
  }

  async function act(action) {
    if (!selected) return;
    const taskId = selected;
    try {
      await api('POST', '/api/tasks/' + seg(taskId) + '/' + action, {});
      clearError();
    } catch (e) {
      showError('cannot ' + action + ' the task: ' + e.message);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Live events
  // ---------------------------------------------------------------------------------------------

  function parse(event) {
    try {
      return JSON.parse(event.data);
    } catch (_) {
      return null;
    }
  }

  let resyncing = null;
  async function resync() {
    if (resyncing) return resyncing;
    resyncing = (async () => {
      try {
        const jobs = [loadTasks(), loadApprovals()];
        if (!workflowsLoaded) jobs.push(loadInfo());
        await Promise.all(jobs);
        if (selected) await loadDetail(selected);
      } catch (e) {
        showError(e.message);
      } finally {
        resyncing = null;
      }
    })();
    return resyncing;
  }

  let tasksTimer = null;
  function loadTasksSoon() {
    if (tasksTimer) return;
    tasksTimer = setTimeout(() => {
      tasksTimer = null;
      loadTasks().catch((e) => showError(e.message));
    }, 100);
  }

  function connect() {
    const connection = $('connection');
    const source = new EventSource('/api/events');
    source.addEventListener('open', () => {
      connection.textContent = 'live';
      connection.className = 'connection live';
    });
    source.addEventListener('error', () => {
      if (source.readyState === EventSource.CLOSED) {
        connection.textContent = 'disconnected: reload the page, or open the address rawko printed';
        connection.className = 'connection down';
      } else {
        connection.textContent = 'reconnecting…';
        connection.className = 'connection down';
      }
    });
    source.addEventListener('hello', (event) => {
      const hello = parse(event) || {};
      if (hello.workspace) $('workspace').textContent = hello.workspace;
      connection.textContent = 'live';
      connection.className = 'connection live';
      resync();
    });
    source.addEventListener('task', (event) => {
      const task = parse(event);
      if (!task) return;
      updateTask(task);
      renderTasks();
      if (task.taskId === selected) renderDetailHeader();
    });
    source.addEventListener('status', (event) => {
      const s = parse(event);
      if (!s || !s.taskId) return;
      if (!tasks.has(s.taskId)) loadTasksSoon();
      const fields = {
        taskId: s.taskId,
        state: s.state,
        stateClass: s.stateClass,
        stateText: s.stateText,
        breadcrumbText: s.breadcrumbText,
        actions: s.actions,
        workflow: s.workflow,
      };
      if (s.state !== 'countdown') countdowns.delete(s.taskId);
      if (s.phasesDone !== undefined && s.phasesDone !== null) {
        progress.set(s.taskId, { phaseIndex: s.phaseIndex, phasesDone: s.phasesDone });
      }
      updateTask(fields);
      if (s.taskId === selected) {
        const phaseless = !phases.length && s.workflow;
        applyProgress(s);
        renderPhases();
        renderDetailHeader();
        if (phaseless) loadDetail(s.taskId);
      }
      renderTasks();
    });
    source.addEventListener('countdown', (event) => {
      const c = parse(event);
      if (!c || !c.taskId) return;
      countdowns.set(c.taskId, c.text || c.label || '');
      if (c.taskId === selected) renderDetailHeader();
    });
    source.addEventListener('output', (event) => {
      const o = parse(event);
      if (o) addOutput(o, true);
    });
    source.addEventListener('finished', (event) => {
      const f = parse(event);
      if (!f || !f.taskId) return;
      countdowns.delete(f.taskId);
      const outcome = f.outcome || 'finished';
      updateTask({ taskId: f.taskId, state: outcome, stateClass: 'finished', updatedAt: Date.now() });
      note(f.taskId, 'Finished — ' + outcome + (f.summary ? ': ' + f.summary : ''));
      renderTasks();
      if (f.taskId === selected) {
        renderDetailHeader();
        loadDetail(f.taskId);
      }
      loadTasksSoon();
    });
    source.addEventListener('approval', (event) => {
      const a = parse(event);
      if (!a) return;
      addApproval(a, true);
      renderApprovals();
    });
    source.addEventListener('approvalWithdrawn', (event) => {
      const w = parse(event);
      if (!w) return;
      const a = approvals.get(approvalKey(w.taskId, w.toolCallId));
      if (removeApproval(w.taskId, w.toolCallId)) {
        const words = {
          allow_once: 'allowed once',
          allow_always: 'always allowed',
          reject_once: 'denied',
          reject_always: 'always denied',
          cancelled: 'dismissed',
        }[w.outcome];
        const by = { web: ' in the page', editor: ' in the editor', terminal: ' in the terminal', task: '' }[w.by] || '';
        if (a) note(w.taskId, (a.summary || a.tool || 'the call') + ': ' + (words || 'answered') + by);
        renderApprovals();
      }
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Start
  // ---------------------------------------------------------------------------------------------

  function start() {
    $('start-form').addEventListener('submit', startTask);
    for (const button of document.querySelectorAll('.actions button[data-action]')) {
      button.addEventListener('click', () => act(button.dataset.action));
    }
    setInterval(() => {
      tickCountdowns();
      for (const button of document.querySelectorAll('.task[data-task-id]')) {
        const task = tasks.get(button.dataset.taskId);
        const node = button.querySelector('.elapsed');
        if (task && node) node.textContent = elapsedText(task);
      }
      const task = selected ? tasks.get(selected) : null;
      if (task) $('detail-elapsed').textContent = elapsedText(task);
    }, 1000);
    loadInfo().catch((e) => showError(e.message));
    connect();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
