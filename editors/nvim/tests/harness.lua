--- Runs one spec file's tests in this Neovim: `nvim --headless --clean -l tests/harness.lua FILE`.
--- Puts the plugin on the runtimepath and loads plugin/rawko.lua as a plugin manager would, then
--- runs the tests the file registers with `require('helpers').test()`, one after the other, each
--- followed by a cleanup. Prints `ok`/`FAIL`/`skip` per test, then `# passed N failed N skipped N`.

local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, 'S').source:sub(2)))
local plugin = vim.fs.dirname(here)
vim.opt.runtimepath:prepend(plugin)
package.path = here .. '/?.lua;' .. package.path
vim.cmd.runtime('plugin/rawko.lua')

local t = require('helpers')
local spec = assert(_G.arg[1], 'usage: harness.lua SPEC')
dofile(spec)
local passed, failed, skipped = t.run(vim.fs.basename(spec))
io.stdout:write(('# passed %d failed %d skipped %d\n'):format(passed, failed, skipped))
io.stdout:flush()
