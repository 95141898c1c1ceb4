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

--- The statusline text: the breadcrumb and state of the task being followed (the one started
--- last from this Neovim while it runs, else the task that changed last), `+N` when other tasks
--- run too, and '' when there is no task. '%' is escaped, so the text fits both a plain
--- 'statusline' (`%{%v:lua.require'rawko'.statusline()%}`) and a lualine component
--- (`require('rawko').statusline`), which calls it with arguments that are ignored.
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
  local text = state.describe(task)
  if others > 0 then
    text = ('%s (+%d)'):format(text, others)
  end
  return escape(text)
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
