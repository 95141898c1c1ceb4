--- Approvals: a tool call the phase blocks opens a window with the tool, its input, the phase and
--- the reason, asks through vim.ui.select, and the answer goes back to rawko; a prompt rawko
--- withdraws (timeout, cancel) closes itself.

local t = require('helpers')

--- The agent writes a file during Plan (read-only), then reads the README.
local WRITE_IN_PLAN = [[
turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - text: "Carrying on."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Still planning."
    delay_ms: 60000
]]

--- The lines of the approval window, when it is open.
---@return string[]?
local function window_lines()
  local p = require('rawko.prompt').active()
  if not (p and p.win and vim.api.nvim_win_is_valid(p.win)) then
    return nil
  end
  return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(p.win), 0, -1, false)
end

---@return test.Select, string, test.Workspace
local function blocked_write(settings)
  local ws = t.workspace()
  t.use(ws, { settings = settings })
  local id = t.start('feature', ws:script('write', WRITE_IN_PLAN))
  local select = t.wait_select('rawko_approval')
  return select, id, ws
end

t.test('a blocked Write shows the tool, input, phase and reason, and asks', function()
  local select, id = blocked_write()
  t.eq(select.labels, { 'Deny', 'Always deny', 'Allow once', 'Always allow' }, 'Deny first')
  t.has(select.opts.prompt, 'Write is blocked in', 'the question')
  local lines = assert(window_lines(), 'the approval window is open')
  local text = table.concat(lines, '\n')
  t.has(lines[1], 'Tool    Write', 'the tool')
  t.has(lines[2], 'Phase   Plan', 'the phase')
  t.has(text, 'Task    Add a --shout flag to greet.sh', 'the task')
  t.has(lines[3], 'Call    Write PLAN.md', "the call, as rawko's summary gives it")
  t.has(
    text,
    '— denied once if there is no answer within 120 s',
    "the deadline, in rawko's words"
  )
  local detail = select.opts.prompt:match('^rawko: (.*) — allow it%?$')
  if detail == 'Write is blocked in phase Plan' then -- an older rawko, without detail
    t.has(
      text,
      'Reason  [workflow] The tool "Write" is blocked during the Plan phase.',
      'the reason'
    )
  else
    t.has(detail, 'Write is blocked in the Plan phase', 'the reason for people')
    t.has(text, 'Reason  ' .. detail, 'the reason for people, in full')
    t.lacks(text, 'workflow_step', 'the text for the model')
  end
  -- Claude Code's field names, whatever the model wrote (the script says `path`).
  t.has(text, '"file_path": "PLAN.md"', 'the input')
  t.has(text, '"content": "1. shout\\n"', 'the input')
  local win = require('rawko.prompt').active().win
  t.has(vim.api.nvim_win_get_config(win).title[1][1], 'rawko: allow Write?', 'the title')
  t.eq(vim.api.nvim_win_get_config(win).relative, 'editor', 'a floating window')
  t.eq(t.task(id).state, 'waiting_approval', 'the task waits')
  t.has(t.statusline(), 'Feature > 📋 Plan [1/4] — waiting for approval', 'the statusline')
  t.choose(select, 'Deny')
end)

t.test('Allow once lets the call run and closes the window', function()
  local select, id, ws = blocked_write()
  t.choose(select, 'Allow once')
  t.wait_output('→ Read README.md')
  t.eq(vim.fn.readfile(ws:path('PLAN.md')), { '1. shout' }, 'PLAN.md was written')
  t.eq(require('rawko.prompt').active(), nil, 'no question left')
  t.eq(t.task(id).state, 'running', 'the task goes on')
  t.eq(t.statusline(), 'Feature > 📋 Plan [1/4]', 'the statusline')
end)

t.test('Deny refuses the call, and the agent is told why', function()
  local select, id, ws = blocked_write()
  t.choose(select, 'Deny')
  t.wait_output('→ Read README.md')
  t.ok(not ws:exists('PLAN.md'), 'PLAN.md was not written')
  local lines = require('rawko.output').lines()
  t.in_order(lines, {
    '→ Write PLAN.md',
    '  ✗ [workflow] The tool "Write" is blocked during the Plan phase.',
    '→ Read README.md',
  }, 'the output')
  t.eq(t.task(id).state, 'running', 'the task goes on')
end)

t.test('a dismissed question counts as cancelled: the call does not run', function()
  local select, _, ws = blocked_write()
  t.choose(select, nil)
  t.wait_output('→ Read README.md')
  t.ok(not ws:exists('PLAN.md'), 'PLAN.md was not written')
end)

t.test('Always allow is asked once for the rest of the task', function()
  local ws = t.workspace()
  t.use(ws)
  local script = ws:script(
    'always',
    [[
turns:
  - tool_calls:
      - {name: Write, input: {path: a.md, content: "a"}}
  - tool_calls:
      - {name: Write, input: {path: b.md, content: "b"}}
  - text: "Both written."
    tool_calls:
      - {name: Read, input: {path: b.md}}
  - text: "Waiting."
    delay_ms: 60000
]]
  )
  t.start('feature', script)
  t.choose(t.wait_select('rawko_approval'), 'Always allow')
  t.wait_output('→ Read b.md')
  t.ok(ws:exists('a.md') and ws:exists('b.md'), 'both files written')
  local asked = vim.tbl_filter(function(s)
    return s.opts.kind == 'rawko_approval'
  end, t.selects)
  t.eq(#asked, 1, 'asked once')
end)

t.test('an approval that times out closes its window by itself', function()
  local select, id, ws = blocked_write({ countdownTickMillis = 100, approvalTimeoutSeconds = 0.5 })
  t.has(
    table.concat(window_lines() or {}, '\n'),
    '— denied once if there is no answer within 1 s',
    "the timeout in rawko's words, rounded up"
  )
  local asked = require('rawko.prompt').active()
  t.ok(
    type(asked.tool_call_id) == 'string' and asked.tool_call_id ~= '',
    'the plugin knows the tool call rawko withdraws by: ' .. tostring(asked.tool_call_id)
  )
  local win = asked.win
  t.wait('the window to close', function()
    return not vim.api.nvim_win_is_valid(win)
  end)
  t.eq(require('rawko.prompt').active(), nil, 'no question left')
  t.wait_output('→ Read README.md')
  t.ok(t.noted('no answer within 0.5 s; Write was rejected'), 'the reason is told')
  -- The user answers too late: nothing happens.
  t.choose(select, 'Allow once')
  vim.wait(200)
  t.ok(not ws:exists('PLAN.md'), 'a late answer does not run the call')
  t.eq(t.task(id).state, 'running', 'the task went on')
end)

t.test('with a plain cmd list, a timed-out approval still closes by its tool call', function()
  local ws = t.workspace()
  t.use(ws, { settings = { countdownTickMillis = 100, approvalTimeoutSeconds = 0.5 } })
  -- The tool call is in the request's params, whatever starts the server.
  local transport = vim.lsp.config.rawko.cmd
  vim.lsp.config('rawko', { cmd = { t.bin, 'serve' } })
  local ok, err = pcall(function()
    local id = t.start('feature', ws:script('write', WRITE_IN_PLAN))
    t.wait_select('rawko_approval')
    local call = require('rawko.prompt').active().tool_call_id
    t.ok(type(call) == 'string' and call ~= '', 'the tool call is known: ' .. tostring(call))
    t.wait('the question to be withdrawn', function()
      return require('rawko.prompt').active() == nil
    end)
    t.wait_output('→ Read README.md')
    t.eq(t.task(id).state, 'running', 'the task went on')
  end)
  vim.lsp.config('rawko', { cmd = transport })
  if not ok then
    error(err, 0)
  end
end)

t.test('cancelling the task closes its pending approval', function()
  local _, id = blocked_write()
  t.ok(window_lines(), 'the window is open')
  vim.cmd('Rawko cancel')
  t.wait('the question to be withdrawn', function()
    return require('rawko.prompt').active() == nil
  end)
  t.wait_state(id, 'cancelled')
end)

t.test('approvals of two tasks are asked one after the other', function()
  local ws = t.workspace()
  t.use(ws)
  local script = ws:script('write', WRITE_IN_PLAN)
  local first = t.start('feature', script, 'First task')
  t.wait_select('rawko_approval')
  require('rawko.state').focused = nil
  local second = t.start('feature', script, 'Second task')
  t.wait('the second question to wait', function()
    return require('rawko.prompt').waiting() == 1
  end)
  t.eq(t.task(second).state, 'waiting_approval', 'the second task waits')
  local asked = vim.tbl_filter(function(s)
    return s.opts.kind == 'rawko_approval'
  end, t.selects)
  t.eq(#asked, 1, 'one question at a time')
  t.choose(asked[1], 'Deny')
  local next_select = t.wait_select('rawko_approval')
  t.has(table.concat(window_lines() or {}, '\n'), 'Task    Second task', 'the second question')
  t.choose(next_select, 'Allow once')
  t.wait('both tasks to go on', function()
    return t.task(first).state == 'running' and t.task(second).state == 'running'
  end)
  t.has(t.statusline(), '(+1)', 'the statusline counts the other task')
end)

t.test('a question withdrawn while a blocking vim.ui.select waits ends cleanly', function()
  local ws = t.workspace()
  t.use(ws, { settings = { countdownTickMillis = 100, approvalTimeoutSeconds = 0.5 } })
  -- Like Neovim's own vim.ui.select (inputlist()): it returns only once answered, handling
  -- events meanwhile.
  local waited = false
  vim.ui.select = function(_, _, on_choice)
    vim.wait(5000, function()
      return require('rawko.prompt').active() == nil
    end, 10)
    waited = true
    on_choice(nil)
  end
  local id = t.start('feature', ws:script('write', WRITE_IN_PLAN))
  t.wait_output('→ Read README.md')
  t.ok(waited, 'the select was shown and ended')
  t.eq(require('rawko.prompt').active(), nil, 'no question left')
  for _, note in ipairs(t.notes) do
    t.ok(note.level ~= vim.log.levels.ERROR, 'no error: ' .. note.message)
  end
  t.eq(t.task(id).state, 'running', 'the task went on')
end)

return t
