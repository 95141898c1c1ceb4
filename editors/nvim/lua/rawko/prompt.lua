--- Questions rawko asks the user — approving a blocked tool call, trusting a workspace's hooks, a
--- message with actions (the offer to open the web page) — shown as a floating window with the details and answered through `vim.ui.select`.
---
--- A question is asked from inside the handler of a server → client request, which Neovim runs
--- in a coroutine: `ask()` yields until the user answers, and the handler then returns the answer
--- to rawko. Questions come one at a time; later ones wait in a queue. rawko may withdraw an
--- approval (`rawko/approvalWithdrawn`, when it timed out or the task was cancelled) or its
--- trust question (`rawko/trustWithdrawn`, unanswered in time), named by what it is about:
--- its window closes, it leaves the queue, and an answer given after that is ignored.

local M = {}

--- What `ask()` returns for a question rawko withdrew.
M.WITHDRAWN = {}

---@class rawko.PromptItem
---@field label string what the user sees
---@field value any what ask() returns when it is chosen

---@class rawko.PromptSpec
---@field kind string 'approval', 'trust' or 'message' (window/showMessageRequest)
---@field title string the floating window's title
---@field lines string[] the details shown in the window
---@field highlights? {line: integer, col: integer, end_col: integer, group: string}[] 0-based
---@field question string the prompt given to vim.ui.select
---@field items rawko.PromptItem[]
---@field task_id? string
---@field tool_call_id? string the tool call an approval is about
---@field team? boolean an approval of a team task (`rawko serve --nats`)
---@field workspace? string the workspace a trust question is about
---@field client_id? integer the LSP client whose server asked

---@class rawko.Prompt : rawko.PromptSpec
---@field co thread
---@field done boolean
---@field selecting boolean
---@field win? integer
---@field buf? integer

---@type rawko.Prompt?
local active = nil
---@type rawko.Prompt[]
local queue = {}

--- The question being asked now, if any.
---@return rawko.Prompt?
function M.active()
  return active
end

--- How many questions wait behind the one being asked.
---@return integer
function M.waiting()
  return #queue
end

--- Sizes floating window `win` to its wrapped lines (at most the editor's height less a margin)
--- and centres it.
---@param win integer
function M.fit(win)
  local width = vim.api.nvim_win_get_width(win)
  local height = math.max(1, math.min(vim.api.nvim_win_text_height(win, {}).all, vim.o.lines - 8))
  vim.api.nvim_win_set_config(win, {
    relative = 'editor',
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 3),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
    height = height,
  })
end

--- Opens `buf` in a floating window in the middle of the editor, as wide as its widest line (at
--- most 100 columns) and as high as its lines wrapped; returns the window.
---@param buf integer
---@param opts {title: string, footer?: string, enter: boolean, zindex?: integer, shift?: integer}
---@return integer
function M.float(buf, opts)
  local width = vim.api.nvim_strwidth(opts.title) + 4
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    width = math.max(width, vim.api.nvim_strwidth(line))
  end
  width = math.max(20, math.min(width + 1, 100, vim.o.columns - 6))
  local win = vim.api.nvim_open_win(buf, opts.enter, {
    relative = 'editor',
    row = 0,
    col = 0,
    width = width,
    height = 1,
    style = 'minimal',
    border = require('rawko.config').get().approval.border,
    title = ' ' .. opts.title .. ' ',
    title_pos = 'center',
    footer = opts.footer and ' ' .. opts.footer .. ' ',
    footer_pos = opts.footer and 'center',
    zindex = opts.zindex,
  })
  -- Long lines wrap at a word, indented (by `shift` more): nothing is cut off.
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].breakindent = true
  vim.wo[win].breakindentopt = 'shift:' .. (opts.shift or 0)
  M.fit(win)
  return win
end

---@param p rawko.Prompt
local function open_window(p)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, p.lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'rawko_prompt'
  local ns = vim.api.nvim_create_namespace('rawko_prompt')
  for _, hl in ipairs(p.highlights or {}) do
    vim.hl.range(buf, ns, hl.group, { hl.line, hl.col }, { hl.line, hl.end_col })
  end
  -- Wrapped values go on under the value, after the 8 columns of the label.
  local win = M.float(buf, { title = p.title, enter = false, zindex = 60, shift = 8 })
  vim.wo[win].winhighlight = 'NormalFloat:RawkoPromptNormal,FloatBorder:RawkoPromptBorder'
  p.win, p.buf = win, buf
end

--- Whether `vim.ui.select` is Neovim's own, which asks with a blocking `inputlist()`.
local function builtin_select()
  local info = debug.getinfo(vim.ui.select, 'S')
  return info ~= nil and info.source:match('vim[/\\]ui%.lua$') ~= nil
end

local show_next

---@param p rawko.Prompt
---@param answer any
local function finish(p, answer)
  if p.done then
    return
  end
  p.done = true
  if p.win and vim.api.nvim_win_is_valid(p.win) then
    vim.api.nvim_win_close(p.win, true)
  end
  queue = vim.tbl_filter(function(waiting)
    return waiting ~= p
  end, queue)
  if active == p then
    active = nil
    if answer == M.WITHDRAWN and p.selecting and builtin_select() then
      -- Neovim's own vim.ui.select waits in inputlist(); <Esc> ends it (its answer is ignored).
      vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'n', false)
    end
  end
  local ok, err = coroutine.resume(p.co, answer)
  if not ok then
    vim.notify('rawko: ' .. tostring(err), vim.log.levels.ERROR)
  end
  show_next()
end

show_next = function()
  if active or #queue == 0 then
    return
  end
  local p = table.remove(queue, 1)
  active = p
  local ok, err = pcall(open_window, p)
  if not ok then
    vim.notify('rawko: cannot open the question window: ' .. tostring(err), vim.log.levels.WARN)
  end
  p.selecting = true
  local question = p.question
  if builtin_select() then
    -- inputlist() covers the screen, the window with the details too: put them in the prompt.
    question = table.concat(p.lines, '\n') .. '\n\n' .. question
  end
  vim.ui.select(p.items, {
    prompt = question,
    kind = 'rawko_' .. p.kind,
    format_item = function(item)
      return item.label
    end,
  }, function(item)
    p.selecting = false
    -- Later, so that a synchronous vim.ui.select returns before the handler goes on.
    vim.schedule(function()
      finish(p, item and item.value or nil)
    end)
  end)
end

--- Asks the user; returns the chosen item's value, nil when the user dismissed the question, or
--- `M.WITHDRAWN` when rawko withdrew it. Must run in a coroutine (a server request handler).
---@param spec rawko.PromptSpec
---@return any
function M.ask(spec)
  local co, is_main = coroutine.running()
  if not co or is_main then
    error('rawko: a question can only be asked from a server request handler', 2)
  end
  ---@type rawko.Prompt
  local p = vim.tbl_extend('force', spec, { co = co, done = false, selecting = false })
  table.insert(queue, p)
  -- Not from inside this coroutine: a vim.ui.select that blocks (Neovim's own waits in
  -- inputlist()) would keep it running, and a withdrawal meanwhile could not resume it.
  vim.schedule(show_next)
  return coroutine.yield()
end

--- All questions, the one asked now first.
---@return rawko.Prompt[]
local function questions()
  return vim.list_extend({ active }, queue) -- `{ nil }` is empty
end

--- Withdraws every question for which `matches(question)` holds; returns whether one was.
---@param matches fun(p: rawko.Prompt): boolean
---@return boolean
local function withdraw_if(matches)
  local withdrawn = false
  for _, p in ipairs(questions()) do
    if matches(p) then
      finish(p, M.WITHDRAWN)
      withdrawn = true
    end
  end
  return withdrawn
end

--- Withdraws the approval of tool call `tool_call_id` of task `task_id`
--- (`rawko/approvalWithdrawn`); returns whether there was one.
---@param task_id string
---@param tool_call_id string
---@return boolean
function M.withdraw_call(task_id, tool_call_id)
  return withdraw_if(function(p)
    return p.kind == 'approval' and p.task_id == task_id and p.tool_call_id == tool_call_id
  end)
end

--- Withdraws the trust question about `workspace` (`rawko/trustWithdrawn`).
---@param workspace string
---@return boolean
function M.withdraw_trust(workspace)
  return withdraw_if(function(p)
    return p.kind == 'trust' and p.workspace == workspace
  end)
end

--- Withdraws every question of `kind` about task `task_id` (its state moved on); with
--- `opts.keep_team`, not a team task's approval, which rawko withdraws itself.
---@param task_id string
---@param kind string
---@param opts? {keep_team?: boolean}
function M.withdraw_task(task_id, kind, opts)
  local keep_team = opts and opts.keep_team
  withdraw_if(function(p)
    return p.task_id == task_id and p.kind == kind and not (keep_team and p.team)
  end)
end

--- Withdraws the messages (`window/showMessageRequest`, kind `message`) server `client_id`
--- asked: a question about a tool call must not wait behind an offer.
---@param client_id integer
function M.withdraw_messages(client_id)
  withdraw_if(function(p)
    return p.kind == 'message' and p.client_id == client_id
  end)
end

--- Withdraws every question a server asked (it stopped), or every question when `client_id` is
--- nil.
---@param client_id? integer
function M.withdraw_all(client_id)
  withdraw_if(function(p)
    return client_id == nil or p.client_id == client_id
  end)
end

return M
