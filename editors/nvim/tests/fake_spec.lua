--- What the plugin does with messages the real server does not send on demand, played by
--- tests/fake_server.lua through Neovim's LSP client: `rawko/trustWorkspace`, approvals
--- withdrawn by the tool call they are about, `hook_output` and unknown output kinds, tasks started by
--- external agents.

local t = require('helpers')

local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, 'S').source:sub(2)))
local log_path

--- Starts the fake server with `plan` for a fresh workspace.
---@param plan table
---@param settings? table rawko's settings (vim.g.rawko.settings)
local function fake(plan, settings)
  local ws = t.workspace({ starter = false })
  t.use(ws, { settings = settings })
  local plan_path = ws:write('plan.json', vim.json.encode(plan))
  log_path = ws:path('received.jsonl')
  local nvim = os.getenv('RAWKO_NVIM') or vim.v.progpath
  vim.lsp.config('rawko', {
    cmd = function(dispatchers, config)
      return vim.lsp.rpc.start(
        { nvim, '--headless', '--clean', '-l', here .. '/fake_server.lua', plan_path, log_path },
        dispatchers,
        { cwd = config.root_dir }
      )
    end,
  })
  require('rawko.client').with_client(function() end)
  return ws
end

local transport_cmd
local function restore()
  vim.lsp.config('rawko', { cmd = transport_cmd })
end

--- What the fake server received, decoded.
---@return table[]
local function received()
  if not log_path or vim.fn.filereadable(log_path) == 0 then
    return {}
  end
  local messages = {}
  for _, line in ipairs(vim.fn.readfile(log_path)) do
    local ok, message = pcall(vim.json.decode, line)
    if ok then -- else the line the fake server is writing now
      table.insert(messages, message)
    end
  end
  return messages
end

--- Waits for the editor's answer to request `id`; returns the response.
local function answer(id)
  local found
  t.wait('the answer to ' .. id, function()
    for _, m in ipairs(received()) do
      if m.id == id and m.method == nil then
        found = m
        return true
      end
    end
  end)
  return found
end

local function request(id, method, params)
  return { send = { jsonrpc = '2.0', id = id, method = method, params = params } }
end

local function notification(method, params)
  return { send = { jsonrpc = '2.0', method = method, params = params } }
end

---@param fn fun()
local function with_fake(fn)
  return function()
    transport_cmd = vim.lsp.config.rawko.cmd
    local ok, err = pcall(fn)
    t.stop_servers()
    restore()
    if not ok then
      error(err, 0)
    end
  end
end

local HOOKS = { 'PreToolUse: ./check.sh', 'Stop: cargo test' }

t.test(
  'rawko/trustWorkspace asks, shows the hooks, and answers trusted or not',
  with_fake(function()
    fake({
      steps = {
        request(
          'rawko-1',
          'rawko/trustWorkspace',
          { workspace = '/w', hooks = HOOKS, changed = false }
        ),
        { await = 'rawko-1' },
        request(
          'rawko-2',
          'rawko/trustWorkspace',
          { workspace = '/w', hooks = HOOKS, changed = true }
        ),
        { await = 'rawko-2' },
        request(
          'rawko-3',
          'rawko/trustWorkspace',
          { workspace = '/w', hooks = HOOKS, changed = false }
        ),
        { await = 'rawko-3' },
      },
    })
    local select = t.wait_select('rawko_trust')
    t.eq(select.labels, { 'Trust and run hooks', "Don't trust" }, 'the choices')
    local p = assert(require('rawko.prompt').active())
    local lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    t.in_order(lines, {
      'Workspace /w',
      'rawko would run these hooks:',
      '  PreToolUse: ./check.sh',
      '  Stop: cargo test',
    }, 'the window')
    t.ok(not t.find(lines, 'changed'), 'not said to have changed')
    t.choose(select, 'Trust and run hooks')
    t.eq(answer('rawko-1').result, { trusted = true }, 'trusted')

    select = t.wait_select('rawko_trust')
    p = assert(require('rawko.prompt').active())
    lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    t.ok(
      t.find(lines, 'The hooks changed since this workspace was last trusted.'),
      'the change is said'
    )
    t.has(vim.api.nvim_win_get_config(p.win).title[1][1], 'the hooks changed', 'the title')
    t.choose(select, "Don't trust")
    t.eq(answer('rawko-2').result, { trusted = false }, 'not trusted')

    select = t.wait_select('rawko_trust')
    t.choose(select, nil)
    t.eq(answer('rawko-3').result, { trusted = false }, 'dismissed: not trusted')
  end)
)

t.test(
  'rawko/trustWorkspace lists the settings that choose what runs and where keys go',
  with_fake(function()
    fake({
      steps = {
        request('rawko-1', 'rawko/trustWorkspace', {
          workspace = '/w',
          hooks = {},
          settings = {
            'provider anthropic at http://127.0.0.1:9',
            'apiKeys: a key for anthropic (values not shown)',
          },
          changed = false,
        }),
        { await = 'rawko-1' },
      },
    })
    local select = t.wait_select('rawko_trust')
    t.eq(select.labels, { 'Trust the workspace', "Don't trust" }, 'the choices')
    local p = assert(require('rawko.prompt').active())
    local lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    t.in_order(lines, {
      'Workspace /w',
      'rawko would use these settings (what runs, where your keys go):',
      '  provider anthropic at http://127.0.0.1:9',
      '  apiKeys: a key for anthropic (values not shown)',
    }, 'the window')
    t.ok(not t.find(lines, 'rawko would run these hooks:'), 'no hooks to list')
    t.choose(select, 'Trust the workspace')
    t.eq(answer('rawko-1').result, { trusted = true }, 'trusted')
  end)
)

t.test(
  'rawko/approvalWithdrawn and rawko/trustWithdrawn withdraw exactly the question they name',
  with_fake(function()
    local function approval(id, task)
      return request(id, 'rawko/approveToolCall', {
        taskId = task,
        toolCallId = 'call-' .. id,
        tool = 'Write',
        input = { path = 'notes.md' },
        phase = 'Plan',
        reason = 'Write is blocked in Plan',
        options = { 'allow_once', 'allow_always', 'reject_once', 'reject_always' },
      })
    end
    fake({
      steps = {
        approval('rawko-10', 'task-a'),
        approval('rawko-11', 'task-b'),
        request(
          'rawko-12',
          'rawko/trustWorkspace',
          { workspace = '/w', hooks = HOOKS, changed = false }
        ),
        -- The waiting approval of task-b is withdrawn, not the one being asked; a tool call of
        -- that name in another task is not the one.
        notification(
          'rawko/approvalWithdrawn',
          { taskId = 'task-a', toolCallId = 'call-rawko-11' }
        ),
        notification(
          'rawko/approvalWithdrawn',
          { taskId = 'task-b', toolCallId = 'call-rawko-11' }
        ),
        { await = 'rawko-11' },
        { await = 'rawko-10' },
        -- Then the question being asked is withdrawn, by its workspace.
        notification('rawko/trustWithdrawn', { workspace = '/w' }),
        { await = 'rawko-12' },
      },
    })
    local first = t.wait_select('rawko_approval')
    t.eq(answer('rawko-11').error.code, -32800, 'the withdrawn request is answered as cancelled')
    local p = require('rawko.prompt').active()
    t.eq(p and p.tool_call_id, 'call-rawko-10', 'the first approval is still asked')
    t.eq(require('rawko.prompt').waiting(), 1, 'the trust question still waits')
    t.choose(first, 'Deny')
    t.eq(answer('rawko-10').result, { outcome = 'reject_once' }, 'the first approval is answered')
    local trust = t.wait_select('rawko_trust')
    local win = require('rawko.prompt').active().win
    t.eq(answer('rawko-12').error.code, -32800, 'the trust question is withdrawn')
    t.wait('its window to close', function()
      return not vim.api.nvim_win_is_valid(win)
    end)
    t.eq(require('rawko.prompt').active(), nil, 'no question left')
    -- A late answer changes nothing: the request was answered once.
    t.choose(trust, 'Trust and run hooks')
    vim.wait(100)
    local answers = vim.tbl_filter(function(m)
      return m.id == 'rawko-12' and m.method == nil
    end, received())
    t.eq(#answers, 1, 'one answer to the withdrawn question')
  end)
)

t.test(
  'an approval shows the reason for people in full, and Deny comes first',
  with_fake(function()
    local detail = 'Write is blocked in the Plan phase (allowed: Read, Glob, Grep); '
      .. string.rep('the phase only plans, so nothing is written yet; ', 4)
      .. 'ask the user to move on'
    local function approval(id, extra)
      return request(
        id,
        'rawko/approveToolCall',
        vim.tbl_extend('force', {
          taskId = 'task-a',
          toolCallId = 'call-' .. id,
          tool = 'Write',
          input = { file_path = 'notes.md', content = 'plan' },
          phase = 'Plan',
          reason = 'Refer to the current phase and call workflow_step',
          options = { 'allow_once', 'allow_always', 'reject_once', 'reject_always' },
          summary = 'Write notes.md (4 bytes)',
        }, extra or {})
      )
    end
    fake({
      steps = {
        approval('rawko-1', { detail = detail }),
        { await = 'rawko-1' },
        approval('rawko-2'), -- an older rawko: no detail
        { await = 'rawko-2' },
        approval('rawko-3', { detail = 'a PreToolUse hook asks: is this fine?' }),
        { await = 'rawko-3' },
      },
    })
    local select = t.wait_select('rawko_approval')
    t.eq(
      select.labels,
      { 'Deny', 'Always deny', 'Allow once', 'Always allow' },
      'the refusals first: a preselected first item denies'
    )
    t.has(select.opts.prompt, 'rawko: Write is blocked in the Plan phase (allowed: Read, Glob')
    local p = assert(require('rawko.prompt').active())
    local text = table.concat(vim.api.nvim_buf_get_lines(p.buf, 0, -1, false), '\n')
    t.has(text, 'Reason  ' .. detail, 'the whole reason for people')
    t.lacks(text, 'workflow_step', 'the text for the model')
    t.eq(
      vim.api.nvim_win_get_height(p.win),
      vim.api.nvim_win_text_height(p.win, {}).all,
      'the window is as high as its wrapped lines: nothing is cut off'
    )
    t.ok(vim.api.nvim_win_get_width(p.win) <= 100, 'long lines wrap rather than widen it')
    t.choose(select, 'Deny')
    t.eq(answer('rawko-1').result, { outcome = 'reject_once' }, 'denied')

    select = t.wait_select('rawko_approval')
    p = assert(require('rawko.prompt').active())
    text = table.concat(vim.api.nvim_buf_get_lines(p.buf, 0, -1, false), '\n')
    t.has(text, 'Reason  Refer to the current phase', 'without detail: the reason rawko gave')
    t.has(select.opts.prompt, 'rawko: Write is blocked in phase Plan — allow it?')
    t.choose(select, 'Allow once')
    t.eq(answer('rawko-2').result, { outcome = 'allow_once' }, 'allowed')

    t.choose(t.wait_select('rawko_approval'), nil)
    t.eq(answer('rawko-3').result, { outcome = 'cancelled' }, 'dismissed')
    t.in_order(require('rawko.output').lines(), {
      '✗ Denied by you — Write notes.md (4 bytes)',
      '✓ Allowed once — Write notes.md (4 bytes)',
      '✗ Dismissed; not run — Write notes.md (4 bytes)',
    }, "the user's answers in the output, in words")
  end)
)

t.test(
  "a team task's approval is asked though the task was never started here; a status does not withdraw it",
  with_fake(function()
    local function status(task, seq, state, class)
      return notification('rawko/status', {
        taskId = task,
        seq = seq,
        state = state,
        stateClass = class,
        actions = { 'reset', 'interrupt', 'cancel', 'message' },
        breadcrumb = {},
        text = ('Add a flag · %s (on ci-runner-1)'):format(state),
        breadcrumbText = 'Add a flag',
        breadcrumbLevels = { 'Add a flag' },
        stateText = '',
      })
    end
    local function approval(id, task, detail)
      return request(id, 'rawko/approveToolCall', {
        taskId = task,
        toolCallId = 'call-' .. id,
        tool = 'Write',
        input = { file_path = 'notes.md', content = 'plan' },
        phase = 'Plan',
        reason = 'Write is blocked in Plan',
        detail = detail,
        options = { 'allow_once', 'allow_always', 'reject_once', 'reject_always' },
        summary = 'Write notes.md (4 bytes)',
      })
    end
    fake({
      steps = {
        -- `rawko serve --nats`: a task a worker on another machine runs, first heard of now.
        status('task-team', 1, 'waiting_approval', 'waiting'),
        approval(
          'rawko-1',
          'task-team',
          'Write is blocked in the Plan phase (allowed: Read) (team task on ci-runner-1)'
        ),
        approval('rawko-2', 'task-local', 'Write is blocked in the Plan phase (allowed: Read)'),
        -- The team's record says the task runs (it lags, or another worker took the task over):
        -- the question stays; the editor's own task that moved on has its question withdrawn.
        status('task-team', 2, 'running', 'busy'),
        status('task-local', 1, 'running', 'busy'),
        { await = 'rawko-2' },
        { await = 'rawko-1' },
      },
      requests = { ['rawko/getTask'] = vim.NIL },
    })
    local select = t.wait_select('rawko_approval')
    t.has(select.opts.prompt, '(team task on ci-runner-1) — allow it?', 'the team task is asked')
    t.eq(answer('rawko-2').error.code, -32800, "the local task's question is withdrawn")
    local p = require('rawko.prompt').active()
    t.eq(p and p.tool_call_id, 'call-rawko-1', "the team task's question is still asked")
    t.eq(t.task('task-team').state, 'running', 'the team task is known, as its status says')
    t.choose(select, 'Allow once')
    t.eq(answer('rawko-1').result, { outcome = 'allow_once' }, 'answered')
    t.in_order(
      require('rawko.output').lines(),
      { '✓ Allowed once — Write notes.md (4 bytes)' },
      'the answer in the output'
    )
  end)
)

--- The feature workflow flattened, as rawko/getTask gives it with Implement current.
local PHASES = {
  { kind = 'phase', index = 0, name = 'Plan', emoji = '📋', depth = 0, status = 'done' },
  {
    kind = 'phase',
    index = 1,
    name = 'Implement',
    emoji = '🛠️',
    depth = 0,
    status = 'current',
  },
  { kind = 'phase', index = 2, name = 'Test', emoji = '🧪', depth = 0, status = 'todo' },
  { kind = 'scope', name = 'Review', depth = 0, status = 'todo' },
  {
    kind = 'phase',
    index = 3,
    name = 'Static Analysis',
    emoji = '🔍',
    depth = 1,
    status = 'todo',
  },
  { kind = 'phase', index = 4, name = 'Peer Review', emoji = '👀', depth = 1, status = 'todo' },
}
for _, node in ipairs(PHASES) do
  node.breadcrumbText = 'Feature > ' .. node.name
end

t.test(
  ":Rawko tasks shows each task's phase tree; the marks follow phaseIndex; <CR> opens a prompt",
  with_fake(function()
    local function status(seq, index, where)
      return notification('rawko/status', {
        taskId = 'task-p',
        seq = seq,
        state = 'running',
        breadcrumb = { { name = 'Feature', phaseName = where, emoji = '', index = 1, total = 4 } },
        text = 'Feature > ' .. where,
        breadcrumbText = 'Feature > ' .. where,
        workflow = 'feature',
        phaseIndex = index,
        phasesDone = index,
      })
    end
    local detail = {
      taskId = 'task-p',
      description = 'Add a --shout flag',
      workflow = 'feature',
      state = 'running',
      breadcrumbText = 'Feature > 🛠️ Implement [2/4]',
      startedAt = 1,
      breadcrumb = {},
      history = {},
      phases = PHASES,
    }
    fake({
      steps = {
        status(1, 1, '🛠️ Implement [2/4]'),
        { await_request = 'rawko/phasePrompt' },
        status(2, 3, 'Review [4/4] > 🔍 Static Analysis [1/2]'),
        { await_request = 'rawko/resumeTask' },
        notification('rawko/status', {
          taskId = 'task-p',
          seq = 3,
          state = 'cancelled',
          breadcrumb = {},
          text = 'Feature — cancelled',
          breadcrumbText = 'Feature',
          workflow = 'feature',
          phasesDone = 3,
        }),
      },
      requests = {
        ['rawko/getTask'] = { task = detail },
        ['rawko/listTasks'] = {
          tasks = {
            {
              taskId = 'task-p',
              description = 'Add a --shout flag',
              workflow = 'feature',
              state = 'running',
              stateClass = 'busy',
              breadcrumbText = 'Feature > 🛠️ Implement [2/4]',
              startedAt = 2,
            },
            {
              taskId = 'task-old',
              description = 'Explain the build',
              state = 'complete',
              stateClass = 'finished',
              breadcrumbText = '',
              startedAt = 1,
            },
          },
        },
        ['rawko/phasePrompt'] = {
          name = 'Test',
          breadcrumbText = 'Feature > 🧪 Test [3/4]',
          prompt = '# Test\n\nRun the **tests**.',
        },
      },
    })
    t.wait('the phases, asked of rawko', function()
      return t.task('task-p') and t.task('task-p').phases
    end)
    vim.cmd('Rawko tasks')
    local lines, win
    t.wait('the tasks window', function()
      lines, win = t.float_lines('rawko_tasks')
      return lines
    end)
    t.eq(lines, {
      'Add a --shout flag — running · task-p',
      '  ✓ 📋 Plan',
      '  ▶ 🛠️ Implement',
      '  ○ 🧪 Test',
      '  ○ Review',
      '    ○ 🔍 Static Analysis',
      '    ○ 👀 Peer Review',
      'Explain the build — complete · task-old',
    }, 'the tasks, each with its phases; nested ones indented')
    t.eq(vim.api.nvim_get_current_win(), win, 'the window is entered')
    t.eq(vim.api.nvim_win_get_cursor(win)[1], 3, 'the cursor on the current phase')

    vim.api.nvim_win_set_cursor(win, { 4, 0 })
    vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
    local text
    t.wait('the prompt window', function()
      text = t.float_lines('markdown')
      return text
    end)
    t.eq(text, { '# Test', '', 'Run the **tests**.' }, "the phase's prompt")
    local buf = vim.api.nvim_get_current_buf()
    t.eq(vim.api.nvim_buf_get_name(buf), 'rawko://prompt/task-p/2', 'its buffer')
    t.eq({ vim.bo[buf].modifiable, vim.bo[buf].buftype }, { false, 'nofile' }, 'read-only')
    local asked = vim.tbl_filter(function(m)
      return m.method == 'rawko/phasePrompt'
    end, received())
    t.eq(asked[1].params, { taskId = 'task-p', index = 2 }, 'asked for that phase')

    t.wait('the marks to move with the next status', function()
      lines = t.float_lines('rawko_tasks')
      return lines and lines[5] == '  ▶ Review'
    end)
    t.eq(vim.list_slice(lines, 2, 7), {
      '  ✓ 📋 Plan',
      '  ✓ 🛠️ Implement',
      '  ✓ 🧪 Test',
      '  ▶ Review',
      '    ▶ 🔍 Static Analysis',
      '    ○ 👀 Peer Review',
    }, 'the current phase inside the nested workflow')
    local gets = vim.tbl_filter(function(m)
      return m.method == 'rawko/getTask' or m.method == 'rawko/listTasks'
    end, received())
    t.eq(#gets, 2, 'no polling: the task was asked about once, the list once')

    vim.cmd('close') -- the prompt
    t.eq(vim.api.nvim_get_current_win(), win, 'back in the tasks window')
    vim.api.nvim_win_set_cursor(win, { 8, 0 })
    vim.api.nvim_feedkeys('r', 'x', false)
    t.wait('the resume request', function()
      return vim.iter(received()):any(function(m)
        return m.method == 'rawko/resumeTask' and m.params.taskId == 'task-old'
      end)
    end)
    t.wait('the cancelled task', function()
      return t.task('task-p').state == 'cancelled'
    end)
    t.eq(vim.list_slice(t.float_lines('rawko_tasks'), 2, 7), {
      '  ✓ 📋 Plan',
      '  ✓ 🛠️ Implement',
      '  ✓ 🧪 Test',
      '  ○ Review',
      '    ○ 🔍 Static Analysis',
      '    ○ 👀 Peer Review',
    }, 'cancelled: to do from where it stopped')
  end)
)

t.test(
  ':Rawko resume offers the tasks rawko says take a resume, whatever their state',
  with_fake(function()
    fake({
      steps = {},
      requests = {
        ['rawko/listTasks'] = {
          tasks = {
            {
              taskId = 'task-a',
              description = 'Paused by rawko',
              state = 'paused',
              stateClass = 'waiting',
              breadcrumbText = '',
              startedAt = 2,
              actions = { 'resume', 'cancel' },
            },
            {
              taskId = 'task-b',
              description = 'Blocked, yet not to resume',
              state = 'blocked',
              stateClass = 'waiting',
              breadcrumbText = '',
              startedAt = 1,
              actions = { 'cancel' },
            },
          },
        },
      },
    })
    vim.cmd('Rawko resume')
    local select = t.wait_select('rawko_task')
    t.eq(#select.labels, 1, 'one task offered: ' .. vim.inspect(select.labels))
    t.has(select.labels[1], 'Paused by rawko', 'the task rawko says takes a resume')
  end)
)

t.test(
  'hook output and output of unknown kinds are shown; nothing fails',
  with_fake(function()
    fake({
      steps = {
        notification('rawko/status', {
          taskId = 'task-h',
          seq = 1,
          state = 'running',
          breadcrumb = {},
          text = 'Hooked',
        }),
        notification('rawko/output', {
          taskId = 'task-h',
          seq = 2,
          kind = 'hook_output',
          text = 'PreToolUse: ok\nall checks passed',
        }),
        notification(
          'rawko/output',
          { taskId = 'task-h', seq = 3, kind = 'telemetry', text = 'a kind from a later rawko' }
        ),
        notification('rawko/output', { taskId = 'task-h', seq = 4, kind = 'assistant_delta' }),
        notification('rawko/output', { taskId = 'task-h', seq = 5, text = 'no kind at all' }),
        notification(
          'rawko/output',
          { taskId = 'task-h', seq = 6, kind = 'assistant_delta', text = 'Still here.' }
        ),
      },
      requests = {
        ['rawko/getTask'] = {
          task = {
            taskId = 'task-h',
            description = 'Hooked task',
            state = 'running',
            breadcrumbText = 'Hooked',
            startedAt = 1,
            breadcrumb = {},
            history = {},
          },
        },
      },
    })
    t.wait_output('Still here.')
    local lines = require('rawko.output').lines()
    t.in_order(lines, {
      '🪝 PreToolUse: ok',
      '   all checks passed',
      '[telemetry] a kind from a later rawko',
      '[unknown] no kind at all',
      'Still here.',
    }, 'the output')
    for _, note in ipairs(t.notes) do
      t.ok(note.level ~= vim.log.levels.ERROR, 'no error: ' .. note.message)
    end
  end)
)

t.test(
  'tasks started by external agents show in the statusline like any task',
  with_fake(function()
    local function status(task, seq, text, state)
      return notification('rawko/status', {
        taskId = task,
        seq = seq,
        state = state or 'running',
        stateClass = 'busy',
        breadcrumb = {},
        text = text,
        breadcrumbText = text,
        breadcrumbLevels = vim.split(text, ' > ', { plain = true }),
        stateText = '',
      })
    end
    fake({
      steps = {
        -- A task first seen in the middle of its stream.
        status('task-ext', 41, 'Claude Code > 🧪 Test [3/4]'),
        request(
          'rawko-1',
          'rawko/trustWorkspace',
          { workspace = '/w', hooks = {}, changed = false }
        ),
        { await = 'rawko-1' },
        status('task-ext', 42, 'Claude Code > 👀 Review [4/4]'),
        status('task-two', 7, 'Codex > 📋 Plan [1/2]'),
      },
      requests = {
        ['rawko/getTask'] = {
          task = {
            taskId = 'task-ext',
            description = 'Fix the flaky test',
            state = 'running',
            breadcrumbText = '',
            startedAt = 1,
            breadcrumb = {},
            history = {},
          },
        },
      },
    })
    t.wait('the external task in the statusline', function()
      return t.statusline() == 'Claude Code > 🧪 Test [3/4]'
    end)
    t.wait('its description, asked of rawko', function()
      local task = t.task('task-ext')
      return task and task.description == 'Fix the flaky test'
    end)
    t.choose(t.wait_select('rawko_trust'), "Don't trust")
    t.wait('the second external task', function()
      return t.task('task-two') ~= nil
    end)
    t.eq(
      t.statusline(),
      'Codex > 📋 Plan [1/2] (+1)',
      'the latest task, and a count of the others'
    )
    t.eq(t.task('task-ext').text, 'Claude Code > 👀 Review [4/4]', 'the first task moved on')
  end)
)

t.test(
  "the statusline renders rawko's fields: its levels, its state words, its state class, external",
  with_fake(function()
    fake({
      steps = {
        -- The words after the breadcrumb are rawko's, not cut from its status line.
        notification('rawko/status', {
          taskId = 'task-1',
          seq = 1,
          state = 'waiting_approval',
          stateClass = 'waiting',
          breadcrumb = {},
          text = 'Feature > 📋 Plan [1/4] — waiting for approval',
          breadcrumbText = 'Feature > 📋 Plan [1/4]',
          breadcrumbLevels = { 'Feature', '📋 Plan [1/4]' },
          stateText = ' — needs your answer',
          workflow = 'feature',
        }),
        -- A state this plugin does not know, which rawko calls finished: not counted as active.
        notification('rawko/status', {
          taskId = 'task-2',
          seq = 1,
          state = 'archived',
          stateClass = 'finished',
          breadcrumb = {},
          text = 'Docs',
          breadcrumbText = 'Docs',
          breadcrumbLevels = { 'Docs' },
          stateText = '',
          workflow = 'docs',
        }),
        -- An external session is told by the field, whatever its id.
        notification('rawko/status', {
          taskId = 'session-7',
          seq = 1,
          state = 'waiting_approval',
          stateClass = 'waiting',
          external = true,
          breadcrumb = {},
          text = 'tidy the README',
          breadcrumbText = 'tidy the README',
          breadcrumbLevels = { 'tidy the README' },
          stateText = '',
        }),
        notification('rawko/status', {
          taskId = 'ext-8',
          seq = 1,
          state = 'running',
          stateClass = 'busy',
          external = false,
          breadcrumb = {},
          text = 'not external',
          breadcrumbText = 'not external',
          breadcrumbLevels = { 'not external' },
          stateText = '',
        }),
      },
      requests = { ['rawko/getTask'] = vim.NIL },
    })
    t.wait('the tasks', function()
      return t.task('ext-8') ~= nil
    end)
    require('rawko.state').focus('task-1')
    t.eq(t.statusline(), 'Feature > 📋 Plan [1/4] — needs your answer (+2)', "rawko's words")
    t.eq(require('rawko.state').is_active(t.task('task-2')), false, 'finished, as rawko says')
    t.ok(t.noted('external session session-7 runs no workflow yet'), 'the external session')
    t.ok(not t.noted('external session ext-8'), 'an id that looks external is not enough')
  end)
)

t.test(
  'settings reach rawko as initializationOptions, init_options over them',
  with_fake(function()
    vim.lsp.config('rawko', { init_options = { approvalTimeoutSeconds = 45 } })
    fake({ steps = {} }, { approvalTimeoutSeconds = 30, countdownTickMillis = 100 })
    t.wait('initialize', function()
      return #received() >= 2
    end)
    local initialize = vim.tbl_filter(function(m)
      return m.method == 'initialize'
    end, received())
    t.eq(#initialize, 1, 'one initialize')
    local last = initialize[1].params
    t.eq(
      last.initializationOptions,
      { approvalTimeoutSeconds = 45, countdownTickMillis = 100 },
      'the settings'
    )
    t.eq(last.rootUri, vim.uri_from_fname(vim.fn.getcwd()), 'the workspace')
    vim.lsp.config('rawko', { init_options = { approvalTimeoutSeconds = vim.NIL } })
  end)
)

return t
