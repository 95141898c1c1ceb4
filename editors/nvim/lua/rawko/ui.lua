--- Redrawing what shows a task's state: the statusline (plain or lualine) and anything listening
--- to the `User RawkoStatus` autocommand.

local M = {}

--- Redraws the statuslines and fires `User RawkoStatus` with `data.text`, the statusline text.
--- Called for each status change and countdown tick (not for streamed output).
function M.redraw()
  local text = require('rawko').statusline()
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

return M
