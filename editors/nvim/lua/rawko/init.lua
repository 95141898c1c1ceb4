--- rawko for Neovim: the public API. `setup()` takes options (as `vim.g.rawko` does),
--- `statusline()` gives the breadcrumb and state of the task being followed (`redraw()` redraws
--- it), `tasks()` and `current()` describe the tasks. The `:Rawko` command is in `rawko.commands`.

local M = {}

--- Takes options over `vim.g.rawko`'s: see `rawko.config.setup()`.
function M.setup(opts)
  return require('rawko.config').setup(opts)
end

local function escape(text)
  return (text:gsub('%%', '%%%%'))
end

--- The breadcrumb's `levels` (rawko's `breadcrumbLevels`) joined by ` > ` in at most `room`
--- columns: shortened from the left by whole levels (`… > 🔍 Static Analysis [1/2]`), else by
--- whole words of the innermost (`… Analysis [1/2]`), never mid-word.
---@param levels string[]
---@param room integer
---@return string
local function shorten(levels, room)
  local width = vim.api.nvim_strwidth
  local text = table.concat(levels, ' > ')
  if width(text) <= room then
    return text
  end
  -- Whole levels go first, the outermost first; then whole words of the innermost.
  for first = 2, #levels do
    local rest = '… > ' .. table.concat(levels, ' > ', first)
    if width(rest) <= room then
      return rest
    end
  end
  local words = vim.split(levels[#levels] or '', ' ', { plain = true })
  for first = 1, #words do
    local rest = '… ' .. table.concat(words, ' ', first)
    if width(rest) <= room then
      return rest
    end
  end
  return '…'
end

--- How many columns the statusline text may take: `statusline.max_width` columns, or that
--- fraction of the width of the statusline being drawn.
---@param max number
---@return integer
local function room(max)
  if max >= 1 then
    return math.floor(max)
  end
  local win = vim.g.statusline_winid
  win = win and vim.api.nvim_win_is_valid(win) and win or 0
  local width = vim.o.laststatus == 3 and vim.o.columns or vim.api.nvim_win_get_width(win)
  return math.floor(width * max)
end

--- The statusline text: the breadcrumb and state of the task being followed (the one started
--- last from this Neovim while it runs, else the task that changed last), `+N` when other tasks
--- run too, and '' when there is no task. When it is longer than `statusline.max_width`, the
--- countdown takes its short form (`⏳ 3s`) and the breadcrumb is shortened from the left. '%' is
--- escaped, so the text fits both a plain 'statusline' (`%{%v:lua.require'rawko'.statusline()%}`)
--- and a lualine component (`require('rawko').statusline`), which calls it with arguments that
--- are ignored.
---@return string
function M.statusline()
  local state = require('rawko.state')
  local task = state.current()
  local others = state.other_active(task)
  local ok, config = pcall(require('rawko.config').get)
  local format = ok and config.statusline.format or nil
  if format then
    -- The format's text is statusline syntax: it may use %#Group# and must escape '%' itself.
    local fine, text = pcall(format, task, others)
    return fine and tostring(text or '') or ''
  end
  if not task then
    return ''
  end
  local where, how, short = state.parts(task)
  local agent = state.agent_prefix(task)
  local more = others > 0 and (' (+%d)'):format(others) or ''
  local max = room(ok and config.statusline.max_width or 0.5)
  local width = vim.api.nvim_strwidth
  if short and width(agent .. where .. how .. more) > max then
    how = short
  end
  how = how .. more
  return escape(agent .. shorten(state.levels(task, where), max - width(agent .. how)) .. how)
end

--- Redraws the statuslines (plain or lualine) and fires `User RawkoStatus` with `data.text`, the
--- statusline text. Called for each status change and countdown tick (not for streamed output).
function M.redraw()
  local text = M.statusline()
  local lualine = package.loaded['lualine']
  if lualine and type(lualine.refresh) == 'function' then
    pcall(lualine.refresh, { place = { 'statusline' } })
  end
  pcall(vim.cmd.redrawstatus, { bang = true })
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'RawkoStatus',
    modeline = false,
    data = { text = text },
  })
end

--- The task the statusline follows, if any.
---@return rawko.Task?
function M.current()
  return require('rawko.state').current()
end

--- Every task this Neovim has heard of, the one that changed last first.
---@return rawko.Task[]
function M.tasks()
  return require('rawko.state').list()
end

return M
