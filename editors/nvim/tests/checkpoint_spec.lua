--- Checkpoints in :Rawko tasks: `d` on a phase opens what it changed (rawko/phaseDiff) in a diff
--- buffer; `R` rewinds the task and the workspace to the start of a phase (rawko/rewindTask),
--- asking first with the dry run's changes, and again before overwriting the user's own changes.

local t = require('helpers')

local GREET = '#!/bin/sh\nname="${1:-world}"\necho "Hello, $name!"\n'

--- The feature workflow to its end: Implement writes a new file and rewrites greet.sh.
local WRITES_IN_IMPLEMENT = [[
turns:
  - text: "The plan: add a shout flag."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Adding the flag."
    tool_calls:
      - {name: Write, input: {path: shout.txt, content: "HELLO\n"}}
      - {name: Write, input: {path: greet.sh, content: "#!/bin/sh\necho HELLO\n"}}
  - text: "Implemented."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Tests pass."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Checking the syntax."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Looks good."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done: greet.sh can shout."
]]

--- Runs the task in `ws` to its end; returns its id. Skips when this rawko takes no checkpoints.
---@param ws test.Workspace
---@return string
local function finished_task(ws)
  t.use(ws)
  local id = t.start('feature', ws:script('writes', WRITES_IN_IMPLEMENT))
  t.eq(t.wait_finished(id), 'complete', 'the outcome')
  t.eq(vim.fn.readfile(ws:path('shout.txt')), { 'HELLO' }, 'the Write ran')
  local phases = t.task(id).phases or {}
  if not (phases[2] and phases[2].hasCheckpoint ~= nil) then
    t.skip('this rawko takes no checkpoints (PhaseNode.hasCheckpoint)')
  end
  return id
end

--- Opens :Rawko tasks with the cursor on the Implement line of task `id`.
---@param id string
local function on_implement(id)
  vim.cmd('Rawko tasks')
  local lines, win
  t.wait('the tasks window', function()
    lines, win = t.float_lines('rawko_tasks')
    return lines and t.find(lines, id)
  end)
  local at = t.find(lines, '🛠️ Implement', t.find(lines, id))
  t.ok(at, 'the Implement line: ' .. vim.inspect(lines))
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { at, 0 })
end

--- Whether this rawko rewinds (`rawko rewind`).
local function rewinds()
  return vim.fn.system({ t.bin, '--help' }):find('rewind', 1, true) ~= nil
end

--- Waits for the question of kind rewind; returns it and the lines of its window.
local function question()
  local select = t.wait_select('rawko_rewind')
  local lines
  t.wait('the question window', function()
    lines = t.float_lines('rawko_prompt')
    return lines
  end)
  return select, table.concat(lines, '\n')
end

t.test('d on a phase opens what it changed in a read-only diff buffer', function()
  local ws = t.workspace()
  local id = finished_task(ws)
  on_implement(id)
  vim.api.nvim_feedkeys('d', 'x', false)
  local lines, win
  t.wait('the diff buffer', function()
    lines, win = t.float_lines('diff')
    return lines
  end)
  local buf = vim.api.nvim_win_get_buf(win)
  t.ok(t.find(lines, '+++ b/shout.txt'), 'the new file: ' .. table.concat(lines, '\n'))
  t.ok(t.find(lines, '+HELLO'), 'its line')
  t.ok(t.find(lines, '+++ b/greet.sh'), 'the rewritten file')
  t.ok(t.find(lines, '-echo "Hello, $name!"'), 'its old line')
  t.ok(not vim.bo[buf].modifiable and vim.bo[buf].readonly, 'read-only')
  t.eq(vim.api.nvim_buf_get_name(buf), ('rawko://diff/%s/1'):format(id), 'named after the phase')
  vim.cmd('close')

  -- Plan wrote nothing.
  local tasks = t.float_lines('rawko_tasks')
  vim.api.nvim_win_set_cursor(0, { t.find(tasks, '📋 Plan', t.find(tasks, id)), 0 })
  vim.api.nvim_feedkeys('d', 'x', false)
  t.wait('the word that Plan changed nothing', function()
    return t.noted('Plan changed no file')
  end)
end)

t.test('R rewinds to a phase after asking with what would change', function()
  if not rewinds() then
    t.skip('this rawko does not rewind')
  end
  local ws = t.workspace()
  -- A git workspace: the checkpoints live in its repository.
  vim.fn.system({ 'git', '-C', ws.dir, 'init', '-q' })
  vim.fn.system({ 'git', '-C', ws.dir, 'add', '-A' })
  vim.fn.system({
    'git',
    '-C',
    ws.dir,
    '-c',
    'user.name=t',
    '-c',
    'user.email=t@t',
    'commit',
    '-qm',
    'start',
  })
  local head = vim.fn.system({ 'git', '-C', ws.dir, 'rev-parse', 'HEAD' })
  local id = finished_task(ws)
  on_implement(id)
  vim.api.nvim_feedkeys('R', 'x', false)
  local select, text = question()
  t.has(text, 'remove shout.txt', 'the question lists the removed file')
  t.has(text, 'restore greet.sh', 'and the restored one')
  t.has(select.opts.prompt, 'Rewind the task to the start of', 'the question')
  t.choose(select, 'Rewind')
  t.wait('the word that it rewound', function()
    return t.noted('r in :Rawko tasks resumes it')
  end)
  t.ok(not ws:exists('shout.txt'), 'the file created since is removed')
  t.eq(table.concat(vim.fn.readfile(ws:path('greet.sh'), 'b'), '\n'), GREET, 'greet.sh restored')
  t.wait('the tree to show the task back in Implement', function()
    local lines = t.float_lines('rawko_tasks') or {}
    return t.find(lines, '▶ 🛠️ Implement') and t.find(lines, '✓ 📋 Plan')
  end)
  t.ok(t.task(id).outcome == nil, 'no longer finished: ' .. tostring(t.task(id).outcome))
  t.eq(vim.fn.system({ 'git', '-C', ws.dir, 'rev-parse', 'HEAD' }), head, 'HEAD untouched')
  t.eq(#vim.tbl_filter(function(s)
    return s.opts.kind == 'rawko_rewind'
  end, t.selects), 1, 'one question')
end)

t.test('R over files the user changed asks again, and only then overwrites them', function()
  if not rewinds() then
    t.skip('this rawko does not rewind')
  end
  local ws = t.workspace()
  local id = finished_task(ws)
  ws:write('greet.sh', '#!/bin/sh\necho mine\n') -- the user's own edit, after the task's
  on_implement(id)
  vim.api.nvim_feedkeys('R', 'x', false)
  local first = question()
  t.choose(first, 'Rewind')
  local select, text = question()
  t.ok(select ~= first, 'a second question')
  t.has(text, 'greet.sh', 'it names the file the user changed')
  t.eq(
    table.concat(vim.fn.readfile(ws:path('greet.sh'), 'b'), '\n'),
    '#!/bin/sh\necho mine\n',
    'kept so far'
  )
  t.ok(ws:exists('shout.txt'), 'nothing rewound so far')
  t.choose(select, 'Rewind anyway')
  t.wait('the word that it rewound', function()
    return t.noted('r in :Rawko tasks resumes it')
  end)
  t.ok(not ws:exists('shout.txt'), 'the file created since is removed')
  t.eq(table.concat(vim.fn.readfile(ws:path('greet.sh'), 'b'), '\n'), GREET, 'greet.sh restored')
end)

return t
