--- Defines the `:Rawko` command; everything else loads when it is first used.

if vim.g.loaded_rawko then
  return
end
vim.g.loaded_rawko = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.api.nvim_create_user_command('Rawko', function()
    vim.notify('rawko needs Neovim 0.11 or later', vim.log.levels.ERROR)
  end, { nargs = '*' })
  return
end

vim.api.nvim_create_user_command('Rawko', function(opts)
  require('rawko.commands').run(opts)
end, {
  nargs = '*',
  desc = 'rawko: start, steer and resume agent tasks',
  complete = function(arglead, cmdline, cursorpos)
    return require('rawko.commands').complete(arglead, cmdline, cursorpos)
  end,
})
