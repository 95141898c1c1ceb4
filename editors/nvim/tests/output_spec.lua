--- The output buffer and the statusline fed notifications directly (no server): seq order, gaps,
--- streams that start again, streaming text, and the statusline as a lualine component.

local t = require('helpers')

local handlers = function()
  return require('rawko.handlers')
end
-- No client: the tasks belong to no server (one that stopped would make them interrupted).
local ctx = { method = 'test' }

local function out(seq, kind, text, extra)
  local params =
    vim.tbl_extend('force', { taskId = 'task-o', seq = seq, kind = kind, text = text }, extra or {})
  handlers().output(nil, params, ctx)
end

--- A status as rawko sends it: `where` (the breadcrumb text) is `text` without the state.
--- A `rawko/status` as rawko sends it: `text` is `where` and the state's words after it.
local function status(seq, text, state, where)
  where = where or text
  handlers().status(nil, {
    taskId = 'task-o',
    seq = seq,
    state = state or 'running',
    stateClass = 'busy',
    breadcrumb = {},
    text = text,
    breadcrumbText = where,
    breadcrumbLevels = vim.split(where, ' > ', { plain = true }),
    stateText = text:sub(#where + 1),
  }, ctx)
end

local function body()
  local lines = require('rawko.output').lines()
  -- Without the task's header line.
  return vim.list_slice(lines, 2)
end

t.test('notifications that arrive out of order are shown in seq order', function()
  status(1, 'Feature > 📋 Plan [1/4]')
  out(3, 'assistant_delta', 'world.')
  out(5, 'tool_result', 'one\ntwo')
  out(2, 'assistant_delta', 'Hello, ')
  t.eq(body(), { '── Feature > 📋 Plan [1/4]', 'Hello, world.' }, 'up to the gap at 4')
  out(4, 'tool_call', 'Read README.md', { tool = 'Read', toolCallId = 'c1' })
  t.eq(body(), {
    '── Feature > 📋 Plan [1/4]',
    'Hello, world.',
    '→ Read README.md',
    '  ← one',
    '    two',
  }, 'all in order')
  out(4, 'tool_call', 'Read README.md again')
  t.eq(#body(), 5, 'a duplicate is dropped')
end)

t.test('a notification that never comes is given up on, and the rest is shown', function()
  status(1, 'Feature > 📋 Plan [1/4]')
  out(3, 'assistant_delta', 'after the gap')
  t.eq(body(), { '── Feature > 📋 Plan [1/4]' }, 'held back')
  t.wait_output('after the gap', 2000)
  -- A late arrival of the missing one is dropped: its place has passed.
  out(2, 'assistant_delta', 'too late')
  t.lacks(table.concat(body(), '\n'), 'too late', 'the late one')
end)

t.test('a stream that starts again at 1 (a resumed task) is followed afresh', function()
  status(1, 'Feature > 📋 Plan [1/4]')
  status(2, 'Feature > 🛠️ Implement [2/4]')
  status(1, 'Feature > 🛠️ Implement [2/4]', 'running')
  status(2, 'Feature > 🧪 Test [3/4]')
  t.eq(t.statusline(), 'Feature > 🧪 Test [3/4]', 'the statusline follows the new stream')
end)

t.test("the agent's text streams onto one line; other output starts new lines", function()
  status(1, 'Feature > 📋 Plan [1/4]')
  out(2, 'assistant_delta', 'Reading ')
  out(3, 'assistant_delta', 'the code.\nThen ')
  out(4, 'assistant_delta', 'planning.')
  out(5, 'reminder', 'Keep going.')
  out(6, 'error', 'provider error: rate_limited')
  out(7, 'tool_result', 'no such file', { isError = true })
  out(8, 'completion', '✅ **Feature Complete**')
  t.eq(body(), {
    '── Feature > 📋 Plan [1/4]',
    'Reading the code.',
    'Then planning.',
    '⏰ Keep going.',
    '✗ provider error: rate_limited',
    '  ✗ no such file',
    '✅ **Feature Complete**',
  }, 'the output')
end)

t.test('the output is Markdown; a handoff between agents is a separator line', function()
  status(1, 'Feature > 📋 Plan [1/4]')
  out(2, 'assistant_delta', 'The **plan** is ready.')
  out(3, 'handoff', '── handoff: planner → developer ──', { agent = 'developer' })
  out(4, 'assistant_delta', 'Implementing.')
  t.eq(body(), {
    '── Feature > 📋 Plan [1/4]',
    'The **plan** is ready.',
    '── handoff: planner → developer ──',
    'Implementing.',
  }, "the next agent's text starts after the separator")
  local buf = require('rawko.output').buffer()
  t.eq(vim.bo[buf].filetype, 'markdown', 'the filetype')
  local marks = vim.api.nvim_buf_get_extmarks(buf, -1, { 3, 0 }, { 3, -1 }, { details = true })
  t.eq(marks[1] and marks[1][4].line_hl_group, 'RawkoHandoff', 'the separator is highlighted')
  t.eq(vim.wo[require('rawko.output').open()].conceallevel, 2, 'the markup is concealed')
end)

t.test('windows that show the end of the output follow it', function()
  status(1, 'Feature > 📋 Plan [1/4]')
  local win = require('rawko.output').open()
  for i = 2, 60 do
    out(i, 'tool_call', 'Read file' .. i)
  end
  local count = vim.api.nvim_buf_line_count(require('rawko.output').buffer())
  t.eq(vim.api.nvim_win_get_cursor(win)[1], count, 'the cursor is on the last line')
  vim.api.nvim_win_set_cursor(win, { 3, 0 })
  out(61, 'tool_call', 'Read more')
  t.eq(vim.api.nvim_win_get_cursor(win)[1], 3, 'a window the user scrolled up stays put')
end)

t.test('the statusline works as a lualine component and escapes %', function()
  status(1, 'Feature > 100% [1/4]')
  local rawko = require('rawko')
  -- lualine calls a function component with the component and whether the window is focused.
  local component = { options = {} }
  t.eq(rawko.statusline(component, true), 'Feature > 100%% [1/4]', 'escaped for the statusline')
  t.eq(t.statusline(), 'Feature > 100% [1/4]', 'drawn as given')
  vim.o.statusline = '%!v:lua.require("rawko").statusline()'
  t.eq(t.statusline(), 'Feature > 100% [1/4]', 'as a whole statusline expression')
end)

t.test('a long statusline is shortened from the left, by levels, then words', function()
  local where = 'Release > Code Review [2/3] > 🔍 Static Analysis [1/2]'
  local words = vim.split(where .. ' — waiting for approval', ' ')
  local function line(max_width)
    require('rawko').setup({ statusline = { max_width = max_width } })
    local text = t.statusline()
    t.ok(vim.api.nvim_strwidth(text) <= max_width, ('%q fits %d columns'):format(text, max_width))
    for word in vim.gsplit(text, ' ') do
      t.ok(word == '…' or vim.tbl_contains(words, word), 'a whole word: ' .. word)
    end
    return text
  end
  status(1, where .. ' — waiting for approval', 'waiting_approval', where)
  t.eq(line(80), where .. ' — waiting for approval', 'whole when it fits')
  t.eq(
    line(75),
    '… > Code Review [2/3] > 🔍 Static Analysis [1/2] — waiting for approval',
    'the first level gone; the state stays'
  )
  t.eq(line(60), '… > 🔍 Static Analysis [1/2] — waiting for approval', 'the next level')
  t.eq(line(50), '… 🔍 Static Analysis [1/2] — waiting for approval', 'then whole words')
  t.eq(line(40), '… Analysis [1/2] — waiting for approval', 'and more')
  t.eq(line(30), '… [1/2] — waiting for approval', 'never part of a word')
  t.eq(line(25), '… — waiting for approval', 'nor of the state')
  require('rawko.config')._reset()
  t.eq(vim.api.nvim_win_get_width(0), 80, 'the window')
  t.eq(t.statusline(), '… Analysis [1/2] — waiting for approval', 'by default, half of it')
end)

t.test('during the countdown the breadcrumb stays, beside ⏳ 3s when room is short', function()
  local where = 'Release > Code Review [2/3] > 🔍 Static Analysis [1/2]'
  status(1, where, 'running', where)
  handlers().countdown(nil, {
    taskId = 'task-o',
    seq = 2,
    secondsLeft = 3,
    text = '⏳ Auto-continuing in 3s — interrupt to stop',
    label = '⏳ Auto-continuing in 3s',
  }, ctx)
  require('rawko').setup({ statusline = { max_width = 80 } })
  t.eq(t.statusline(), where .. ' ⏳ 3s', 'the short countdown, the whole breadcrumb')
  require('rawko').setup({ statusline = { max_width = 40 } })
  t.eq(t.statusline(), '… > 🔍 Static Analysis [1/2] ⏳ 3s', 'the breadcrumb shortened')
end)

t.test('a statusline format from setup() gets the task and the count of other tasks', function()
  require('rawko').setup({
    statusline = {
      format = function(task, others)
        return task and ('%s|%s|%d'):format(task.id, task.state, others) or 'idle'
      end,
    },
  })
  t.eq(t.statusline(), 'idle', 'no task')
  status(1, 'Feature > 📋 Plan [1/4]', 'waiting_approval')
  t.eq(t.statusline(), 'task-o|waiting_approval|0', 'the task')
end)

t.test('the statusline is empty without tasks, and redraws fire User RawkoStatus', function()
  require('rawko').setup({ statusline = { max_width = 80 } })
  t.eq(require('rawko').statusline(), '', 'empty')
  status(1, 'Feature > 📋 Plan [1/4]')
  handlers().countdown(
    nil,
    { taskId = 'task-o', seq = 2, secondsLeft = 3, text = '⏳ Auto-continuing in 3s' },
    ctx
  )
  t.eq(
    t.statuslines,
    { 'Feature > 📋 Plan [1/4]', 'Feature > 📋 Plan [1/4] ⏳ Auto-continuing in 3s' },
    'the countdown follows where the task is'
  )
  status(
    3,
    'Feature > 📋 Plan [1/4] — auto-continuing',
    'countdown',
    'Feature > 📋 Plan [1/4]'
  )
  handlers().countdown(
    nil,
    { taskId = 'task-o', seq = 4, secondsLeft = 2, text = '⏳ Auto-continuing in 2s' },
    ctx
  )
  t.eq(
    t.statuslines[#t.statuslines],
    'Feature > 📋 Plan [1/4] ⏳ Auto-continuing in 2s',
    "the tick, after where the task is (not after rawko's status line)"
  )
  handlers().task_finished(
    nil,
    { taskId = 'task-o', seq = 5, outcome = 'failed', summary = 'script exhausted\nmore' },
    ctx
  )
  t.eq(require('rawko').current().state, 'failed', 'finished')
  t.ok(t.noted('task failed: script exhausted'), 'the outcome is told')
  t.eq(#t.statuslines, 5, 'a redraw for each status, tick and end')
end)

return t
