--- The output buffer: a scratch Markdown buffer (`rawko://output`) that streams what rawko's
--- tasks do — the agent's text, tool calls and results, handoffs between agents, reminders, hook
--- output, completion — in the order of each task's notifications. Windows that show its last
--- line follow it as it grows.

local M = {}

M.name = 'rawko://output'

local ns = vim.api.nvim_create_namespace('rawko_output')

--- How each kind of output starts, and its highlight group. Unknown kinds show their text with
--- their kind's name.
local kinds = {
  tool_call = { prefix = '→ ', group = 'RawkoToolCall' },
  tool_result = { prefix = '  ← ', group = 'RawkoToolResult' },
  context_injected = { prefix = '» ', group = 'RawkoContext' },
  reminder = { prefix = '⏰ ', group = 'RawkoReminder' },
  hook_output = { prefix = '🪝 ', group = 'RawkoHook' },
  completion = { prefix = '', group = 'RawkoCompletion' },
  handoff = { prefix = '', group = 'RawkoHandoff' }, -- a separator line: `── handoff: a → b ──`
  error = { prefix = '✗ ', group = 'RawkoError' },
}

local groups = {
  RawkoHeader = 'Title',
  RawkoStatus = 'Special',
  RawkoToolCall = 'Function',
  RawkoToolResult = 'Comment',
  RawkoToolError = 'DiagnosticError',
  RawkoContext = 'Comment',
  RawkoReminder = 'WarningMsg',
  RawkoHook = 'Identifier',
  RawkoCompletion = 'DiagnosticOk',
  RawkoHandoff = 'Title',
  RawkoError = 'DiagnosticError',
  RawkoAllowed = 'DiagnosticOk',
  RawkoDenied = 'DiagnosticWarn',
  RawkoPhaseDone = 'Comment',
  RawkoPhaseCurrent = 'Special',
  RawkoPhaseTodo = 'NormalFloat',
  RawkoSubagent = 'Identifier',
  RawkoPromptNormal = 'NormalFloat',
  RawkoPromptBorder = 'FloatBorder',
  RawkoPromptLabel = 'Label',
}
for group, link in pairs(groups) do
  vim.api.nvim_set_hl(0, group, { link = link, default = true })
end

---@type integer?
local buf = nil
--- The task whose lines were written last, and whether the last line is agent text still
--- streaming (so the next `assistant_delta` continues it).
local last = { task = nil, streaming = false }

--- The output buffer, created when missing.
---@return integer
function M.buffer()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true) -- scratch: nofile, hidden when abandoned, no swap
  vim.api.nvim_buf_set_name(buf, M.name)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'markdown' -- the agent's text is Markdown
  last = { task = nil, streaming = false }
  return buf
end

--- The lines of the output buffer (empty when it was never written).
---@return string[]
function M.lines()
  return buf and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    or {}
end

--- Changes the buffer with `change(b, empty)` (`empty`: it has nothing in it yet); windows that
--- showed its last line move along to the new one.
---@param change fun(b: integer, empty: boolean)
local function edit(change)
  local b = M.buffer()
  local count = vim.api.nvim_buf_line_count(b)
  local following = vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_cursor(win)[1] >= count
  end, vim.fn.win_findbuf(b))
  vim.bo[b].modifiable = true
  change(b, count == 1 and vim.api.nvim_buf_get_lines(b, 0, 1, false)[1] == '')
  vim.bo[b].modifiable = false
  count = vim.api.nvim_buf_line_count(b)
  for _, win in ipairs(following) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

--- Appends whole lines, highlighted with `group`.
---@param lines string[]
---@param group? string
local function append_lines(lines, group)
  edit(function(b, empty)
    local start = empty and 0 or vim.api.nvim_buf_line_count(b)
    vim.api.nvim_buf_set_lines(b, empty and 0 or -1, -1, false, lines)
    for i = 0, group and #lines - 1 or -1 do
      vim.api.nvim_buf_set_extmark(b, ns, start + i, 0, { line_hl_group = group })
    end
  end)
  last.streaming = false
end

--- Appends the agent's text to the text streaming on the last line.
---@param text string
local function append_text(text)
  edit(function(b, empty)
    local pieces = vim.split(text, '\n', { plain = true })
    if last.streaming and not empty then
      local row = vim.api.nvim_buf_line_count(b) - 1
      local line = vim.api.nvim_buf_get_lines(b, row, row + 1, false)[1]
      vim.api.nvim_buf_set_text(b, row, #line, row, #line, pieces)
    else
      vim.api.nvim_buf_set_lines(b, empty and 0 or -1, -1, false, pieces)
    end
  end)
  last.streaming = true
end

---@param task rawko.Task
local function header(task)
  M.buffer()
  if last.task == task.id then
    return
  end
  last.task = task.id
  -- A subagent is named by its label: `task-2 · reviewer (subagent of task-1)`.
  local name = task.subagent and task.subagent.label or task.description
  local title = name and ('%s · %s'):format(task.id, name) or task.id
  append_lines({ '── ' .. title .. ' ──' }, 'RawkoHeader')
end

--- The first line of `text`.
---@param text string
---@return string
function M.first_line(text)
  return (text:gsub('\n.*', ''))
end

--- Splits `text` into lines, the first one after `prefix` and the others indented to match.
---@param prefix string
---@param text string
---@return string[]
function M.prefixed(prefix, text)
  local lines = vim.split(text, '\n', { plain = true, trimempty = false })
  while #lines > 1 and lines[#lines] == '' do
    table.remove(lines)
  end
  local indent = string.rep(' ', vim.api.nvim_strwidth(prefix))
  for i, line in ipairs(lines) do
    lines[i] = (i == 1 and prefix or indent) .. line
  end
  return lines
end

--- Shows one `rawko/output` notification of `task`.
---@param task rawko.Task
---@param params table
function M.output(task, params)
  header(task)
  local text, kind = params.text or '', params.kind or 'unknown'
  if kind == 'assistant_delta' then
    append_text(text)
    return
  end
  if kind == 'context_injected' and not require('rawko.config').get().output.show_context then
    append_lines({ '» context: ' .. M.first_line(text) }, 'RawkoContext')
    return
  end
  local style = kinds[kind] or { prefix = ('[%s] '):format(kind) }
  if kind == 'tool_result' and params.isError then
    style, text = { prefix = '  ✗ ', group = 'RawkoToolError' }, text ~= '' and text or 'failed'
  end
  append_lines(M.prefixed(style.prefix, text), style.group)
end

--- Notes a change of a task's status line (a phase change, a state change) and its reason.
---@param task rawko.Task
---@param before_text string
function M.status(task, before_text)
  if task.text == before_text and not task.reason then
    return
  end
  header(task)
  local line = '── ' .. (task.text ~= '' and task.text or task.state)
  if task.reason then
    line = line .. ' (' .. task.reason .. ')'
  end
  -- A block reason is shown once the blocked tool result arrives; keep it to one line here.
  append_lines({ (line:gsub('\n.*', '…')) }, 'RawkoStatus')
end

--- Notes the end of a task.
---@param task rawko.Task
function M.finished(task)
  header(task)
  append_lines(
    M.prefixed(('■ %s: '):format(task.outcome or 'finished'), task.summary or ''),
    task.outcome == 'complete' and 'RawkoCompletion' or 'RawkoError'
  )
end

--- Notes the user's answer to an approval, in the words of the choice (`Denied by you`).
---@param task rawko.Task
---@param allowed boolean
---@param words string
---@param call string the call, in one line
function M.answered(task, allowed, words, call)
  header(task)
  local line = ('  %s %s — %s'):format(allowed and '✓' or '✗', words, call)
  append_lines({ line }, allowed and 'RawkoAllowed' or 'RawkoDenied')
end

--- Notes something that is not a notification (e.g. the answer to `:Rawko next`).
---@param task rawko.Task
---@param text string
function M.note(task, text)
  header(task)
  append_lines(M.prefixed('» ', text), 'RawkoStatus')
end

--- Opens the output buffer in a window (or goes to the window that shows it); returns the window.
---@param opts? {enter?: boolean}
---@return integer
function M.open(opts)
  opts = opts or {}
  local b = M.buffer()
  local wins = vim.fn.win_findbuf(b)
  if #wins > 0 then
    if opts.enter then
      vim.api.nvim_set_current_win(wins[1])
    end
    return wins[1]
  end
  local current = vim.api.nvim_get_current_win()
  vim.cmd(require('rawko.config').get().output.split)
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, b)
  vim.wo[win].wrap = true
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].conceallevel = 2 -- `**done**` shows as bold text where Markdown is highlighted
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(b), 0 })
  if not opts.enter and vim.api.nvim_win_is_valid(current) then
    vim.api.nvim_set_current_win(current)
  end
  return win
end

--- Opens the output window, or closes it when it is open.
function M.toggle()
  local wins = vim.fn.win_findbuf(M.buffer())
  if #wins == 0 then
    return M.open({ enter = true })
  end
  for _, win in ipairs(wins) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    end
  end
end

--- Forgets the buffer (for tests).
function M._reset()
  if buf and vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_delete(buf, { force = true })
  end
  buf = nil
  last = { task = nil, streaming = false }
end

return M
