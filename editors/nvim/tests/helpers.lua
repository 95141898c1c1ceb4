--- What the tests share: registering and running tests, assertions, waiting for a condition
--- (never a fixed sleep), a workspace with the starter workflows and a script for the scripted
--- provider, a rawko server for it, and a stand-in user who answers `vim.ui.input` and
--- `vim.ui.select` the way a test says.

local t = {}

local repo = assert(os.getenv('RAWKO_REPO'), 'RAWKO_REPO must name the repository')
t.repo = repo
t.bin = assert(os.getenv('RAWKO_BIN'), 'RAWKO_BIN must name the rawko binary')

-- ---------------------------------------------------------------------------------------------
-- Tests
-- ---------------------------------------------------------------------------------------------

local tests = {}

--- Registers a test.
---@param name string
---@param fn fun()
function t.test(name, fn)
  table.insert(tests, { name = name, fn = fn })
end

local function out(line)
  io.stdout:write(line, '\n')
  io.stdout:flush()
end

local SKIP = {}

--- Ends the test as skipped (e.g. the rawko binary lacks what it tests), saying why.
---@param why string
function t.skip(why)
  error(setmetatable({ why = why }, SKIP), 0)
end

--- Runs the registered tests; returns how many passed, failed and were skipped.
---@param file string
---@return integer passed, integer failed, integer skipped
function t.run(file)
  local passed, failed, skipped = 0, 0, 0
  for _, test in ipairs(tests) do
    t.setup()
    local started = vim.uv.hrtime()
    local ok, err = xpcall(test.fn, function(e)
      if getmetatable(e) == SKIP then
        return e
      end
      return debug.traceback(tostring(e), 2)
    end)
    local skip = not ok and getmetatable(err) == SKIP
    local report = (ok or skip) and '' or t.report()
    local cleaned, cleanup_err = pcall(t.cleanup)
    local ms = (vim.uv.hrtime() - started) / 1e6
    if skip and cleaned then
      skipped = skipped + 1
      out(('skip %s: %s (%s)'):format(file, test.name, err.why))
    elseif ok and cleaned then
      passed = passed + 1
      out(('ok   %s: %s (%d ms)'):format(file, test.name, ms))
    else
      failed = failed + 1
      out(('FAIL %s: %s (%d ms)'):format(file, test.name, ms))
      local text = (ok or skip) and ('cleanup failed: ' .. tostring(cleanup_err)) or err
      for line in vim.gsplit(text .. '\n' .. report, '\n') do
        out('     ' .. line)
      end
    end
  end
  return passed, failed, skipped
end

-- ---------------------------------------------------------------------------------------------
-- Assertions
-- ---------------------------------------------------------------------------------------------

---@param actual any
---@param expected any
---@param what? string
function t.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(
      ('%s:\n  expected %s\n  got      %s'):format(
        what or 'values differ',
        vim.inspect(expected),
        vim.inspect(actual)
      ),
      2
    )
  end
end

---@param cond any
---@param what string
function t.ok(cond, what)
  if not cond then
    error('expected: ' .. what, 2)
  end
end

--- Asserts that `text` contains `needle` (plain text).
---@param text string
---@param needle string
---@param what? string
function t.has(text, needle, what)
  if type(text) ~= 'string' or not text:find(needle, 1, true) then
    error(
      ('%s: %s does not contain %s'):format(what or 'text', vim.inspect(text), vim.inspect(needle)),
      2
    )
  end
end

--- Asserts that `text` does not contain `needle`.
function t.lacks(text, needle, what)
  if type(text) == 'string' and text:find(needle, 1, true) then
    error(('%s: %s contains %s'):format(what or 'text', vim.inspect(text), vim.inspect(needle)), 2)
  end
end

--- The index of the first item of `list` containing `needle`, after index `after`.
---@param list string[]
---@param needle string
---@param after? integer
---@return integer?
function t.find(list, needle, after)
  for i = (after or 0) + 1, #list do
    if list[i]:find(needle, 1, true) then
      return i
    end
  end
  return nil
end

--- Asserts that the items of `list` contain each of `needles` in this order; returns the indexes.
---@param list string[]
---@param needles string[]
---@param what string
---@return integer[]
function t.in_order(list, needles, what)
  local at, found = 0, {}
  for _, needle in ipairs(needles) do
    local i = t.find(list, needle, at)
    if not i then
      error(
        ('%s: %s not found (after item %d) in:\n  %s'):format(
          what,
          vim.inspect(needle),
          at,
          table.concat(list, '\n  ')
        ),
        2
      )
    end
    at = i
    table.insert(found, i)
  end
  return found
end

--- Waits until `cond()` is true; fails naming `what` after `timeout_ms` (default 10 s).
---@param what string
---@param cond fun(): any
---@param timeout_ms? integer
function t.wait(what, cond, timeout_ms)
  local ok = vim.wait(timeout_ms or 10000, function()
    return cond() and true or false
  end, 10)
  if not ok then
    error('timed out waiting for ' .. what, 2)
  end
end

-- ---------------------------------------------------------------------------------------------
-- The user
-- ---------------------------------------------------------------------------------------------

---@class test.Select
---@field items any[]
---@field labels string[]
---@field opts table
---@field on_choice fun(item: any?)
---@field answered boolean

--- Every vim.ui.select call so far, oldest first.
---@type test.Select[]
t.selects = {}
--- Every vim.ui.input prompt so far.
---@type string[]
t.input_prompts = {}
--- What vim.ui.input answers next (nil: the user dismisses it).
---@type (string|false)[]
t.inputs = {}
--- What was shown with vim.notify.
---@type {message: string, level: integer?}[]
t.notes = {}
--- The statusline text after each redraw (User RawkoStatus), evaluated as Neovim draws it.
---@type string[]
t.statuslines = {}

local saved = {}

--- Evaluates the statusline of the current window as Neovim draws it.
---@return string
function t.statusline()
  return vim.api.nvim_eval_statusline(vim.o.statusline, { winid = vim.api.nvim_get_current_win() }).str
end

function t.setup()
  saved.select, saved.input, saved.notify = vim.ui.select, vim.ui.input, vim.notify
  t.selects, t.input_prompts, t.inputs, t.notes, t.statuslines = {}, {}, {}, {}, {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = {}
    for _, item in ipairs(items) do
      table.insert(labels, opts.format_item and opts.format_item(item) or tostring(item))
    end
    table.insert(t.selects, {
      items = items,
      labels = labels,
      opts = opts,
      on_choice = on_choice,
      answered = false,
    })
  end
  vim.ui.input = function(opts, on_confirm)
    table.insert(t.input_prompts, opts.prompt or '')
    local answer = table.remove(t.inputs, 1)
    on_confirm(answer or nil)
  end
  vim.notify = function(message, level)
    table.insert(t.notes, { message = tostring(message), level = level })
  end
  vim.o.laststatus = 2
  vim.o.statusline = "%{%v:lua.require'rawko'.statusline()%}"
  saved.autocmd = vim.api.nvim_create_autocmd('User', {
    pattern = 'RawkoStatus',
    callback = function()
      table.insert(t.statuslines, t.statusline())
    end,
  })
end

--- Waits for a vim.ui.select of `kind` (e.g. 'rawko_approval') that is not answered yet.
---@param kind string
---@param timeout_ms? integer
---@return test.Select
function t.wait_select(kind, timeout_ms)
  local found
  t.wait('a vim.ui.select of kind ' .. kind, function()
    for _, s in ipairs(t.selects) do
      if s.opts.kind == kind and not s.answered then
        found = s
        return true
      end
    end
  end, timeout_ms)
  return found
end

--- Answers `select` with the item labelled `label` (nil: dismisses it).
---@param select test.Select
---@param label string?
function t.choose(select, label)
  select.answered = true
  if label == nil then
    select.on_choice(nil)
    return
  end
  for i, l in ipairs(select.labels) do
    if l == label or l:find(label, 1, true) then
      select.on_choice(select.items[i])
      return
    end
  end
  error(('no item %q among %s'):format(label, vim.inspect(select.labels)), 2)
end

--- The lines and window of the floating window that shows a buffer of `filetype`, if one does.
---@param filetype string
---@return string[]?, integer?
function t.float_lines(filetype)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.api.nvim_win_get_config(win).relative ~= '' and vim.bo[buf].filetype == filetype then
      return vim.api.nvim_buf_get_lines(buf, 0, -1, false), win
    end
  end
end

--- Whether something containing `needle` was shown with vim.notify.
---@param needle string
---@return boolean
function t.noted(needle)
  for _, note in ipairs(t.notes) do
    if note.message:find(needle, 1, true) then
      return true
    end
  end
  return false
end

-- ---------------------------------------------------------------------------------------------
-- Workspaces and servers
-- ---------------------------------------------------------------------------------------------

local function copy_dir(from, to)
  vim.fn.mkdir(to, 'p')
  for name, kind in vim.fs.dir(from) do
    if kind == 'directory' then
      copy_dir(from .. '/' .. name, to .. '/' .. name)
    else
      vim.fn.writefile(vim.fn.readfile(from .. '/' .. name, 'b'), to .. '/' .. name, 'b')
    end
  end
end

---@class test.Workspace
---@field dir string
---@field home string a home directory for its server (XDG_CONFIG_HOME, XDG_STATE_HOME beneath)
local Workspace = {}
Workspace.__index = Workspace

--- Writes `content` to `rel` in the workspace; returns the absolute path.
function Workspace:write(rel, content)
  local path = self.dir .. '/' .. rel
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  vim.fn.writefile(vim.split(content, '\n', { plain = true }), path, 'b')
  return path
end

--- Writes a script of model turns for the scripted provider; returns its absolute path.
function Workspace:script(name, yaml)
  return self:write('scripts/' .. name .. '.yaml', yaml)
end

function Workspace:path(rel)
  return self.dir .. '/' .. rel
end

function Workspace:exists(rel)
  return vim.uv.fs_stat(self:path(rel)) ~= nil
end

local counter = 0

--- A workspace in a temporary directory, with the starter workflows (feature, review) in
--- .rawko/workflows and a tiny project, and a home directory of its own for its server.
---@param opts? {starter?: boolean}
---@return test.Workspace
function t.workspace(opts)
  opts = opts or {}
  counter = counter + 1
  local base = vim.fs.normalize(vim.fn.tempname()) .. '-' .. counter
  local ws = setmetatable({ dir = base .. '/ws', home = base .. '/home' }, Workspace)
  vim.fn.mkdir(ws.dir, 'p')
  vim.fn.mkdir(ws.home, 'p')
  ws.dir = vim.uv.fs_realpath(ws.dir)
  if opts.starter ~= false then
    copy_dir(repo .. '/server/starter/workflows', ws.dir .. '/.rawko/workflows')
  end
  ws:write('README.md', '# greet\n\nSays hello.\n')
  ws:write('greet.sh', '#!/bin/sh\nname="${1:-world}"\necho "Hello, $name!"\n')
  return ws
end

--- The environment of the server for `ws`: its own home, config, task store and runtime
--- directory (so `rawko hook` run with the same environment finds its endpoint).
---@param ws test.Workspace
---@return table<string, string>
function t.server_env(ws)
  return {
    HOME = ws.home,
    XDG_CONFIG_HOME = ws.home .. '/.config',
    XDG_STATE_HOME = ws.home .. '/.local/state',
    XDG_RUNTIME_DIR = ws.home .. '/run', -- where rawko writes its endpoint for external agents
    PI_CODING_AGENT_DIR = ws.home .. '/.pi/agent',
    RAWKO_LOG = 'warn,rawko=debug',
  }
end

--- Configures the plugin for `ws` as a user would (vim.g.rawko, vim.lsp.config) and makes it the
--- current directory. `settings` are rawko's; `task` are `:Rawko start`'s defaults.
---@param ws test.Workspace
---@param opts? {settings?: table, task?: table, output?: table}
function t.use(ws, opts)
  opts = opts or {}
  vim.g.rawko = {
    bin = t.bin,
    settings = opts.settings or { countdownTickMillis = 100 },
    task = opts.task or { provider = 'scripted' },
    output = opts.output,
    statusline = { max_width = 200 }, -- whole breadcrumbs (tests of shortening set less)
  }
  vim.lsp.config('rawko', {
    cmd_env = t.server_env(ws),
    handlers = {
      -- rawko's messages (e.g. a skipped workflow) are kept with the notifications.
      ['window/showMessage'] = function(_, params)
        table.insert(t.notes, { message = 'showMessage: ' .. tostring(params and params.message) })
      end,
    },
  })
  vim.cmd.cd(vim.fn.fnameescape(ws.dir))
end

--- The rawko clients running now.
---@return vim.lsp.Client[]
function t.clients()
  return vim.lsp.get_clients({ name = 'rawko', _uninitialized = true })
end

--- Starts a task through `:Rawko start WORKFLOW` with `script` as the scripted provider's script,
--- answering the description prompt; returns the task's id.
---@param workflow string
---@param script string
---@param description? string
---@return string
function t.start(workflow, script, description)
  local config = vim.g.rawko
  config.task =
    vim.tbl_extend('force', config.task or {}, { provider = 'scripted', script = script })
  vim.g.rawko = config
  table.insert(t.inputs, description or 'Add a --shout flag to greet.sh')
  vim.cmd('Rawko start ' .. workflow)
  local state = require('rawko.state')
  t.wait('the task to start', function()
    return state.focused ~= nil
  end)
  return state.focused
end

--- The task `id` as the plugin knows it.
---@param id string
---@return rawko.Task
function t.task(id)
  return require('rawko.state').tasks[id]
end

--- Waits until task `id` is in `state_name`.
function t.wait_state(id, state_name, timeout_ms)
  t.wait(('task %s to be %s'):format(id, state_name), function()
    local task = t.task(id)
    return task and task.state == state_name
  end, timeout_ms)
end

--- Waits until task `id` finished (its `rawko/taskFinished` arrived); returns its outcome.
function t.wait_finished(id, timeout_ms)
  t.wait(('task %s to finish'):format(id), function()
    local task = t.task(id)
    return task and task.outcome ~= nil
  end, timeout_ms)
  return t.task(id).outcome
end

--- Waits until the output buffer has a line containing `needle`.
function t.wait_output(needle, timeout_ms)
  t.wait('output containing ' .. vim.inspect(needle), function()
    return t.find(require('rawko.output').lines(), needle) ~= nil
  end, timeout_ms)
end

--- Stops every rawko server and waits until they are gone.
function t.stop_servers()
  for _, client in ipairs(t.clients()) do
    client:stop()
  end
  local stopped = vim.wait(3000, function()
    return #t.clients() == 0
  end, 10)
  if not stopped then
    for _, client in ipairs(t.clients()) do
      client:stop(true)
    end
    vim.wait(2000, function()
      return #t.clients() == 0
    end, 10)
  end
end

--- What went on, for a failing test's report.
---@return string
function t.report()
  local lines = { '--- statusline now: ' .. vim.inspect(t.statusline()) }
  table.insert(lines, '--- statuslines seen: ' .. vim.inspect(t.statuslines))
  local state = require('rawko.state')
  for id, task in pairs(state.tasks) do
    table.insert(
      lines,
      ('--- task %s: state=%s text=%q reason=%s'):format(
        id,
        task.state,
        task.text,
        tostring(task.reason)
      )
    )
  end
  local notes = {}
  for _, note in ipairs(t.notes) do
    table.insert(notes, note.message)
  end
  table.insert(lines, '--- notifications: ' .. vim.inspect(notes))
  local output = require('rawko.output').lines()
  table.insert(lines, ('--- output (last 40 of %d lines):'):format(#output))
  for i = math.max(1, #output - 39), #output do
    table.insert(lines, '  ' .. output[i])
  end
  -- Neovim's LSP log has rawko's stderr.
  local log = vim.lsp.log.get_filename()
  table.insert(lines, ('--- %s (last 40 lines):'):format(log))
  for _, line in ipairs(vim.fn.filereadable(log) == 1 and vim.fn.readfile(log, '', -40) or {}) do
    table.insert(lines, '  ' .. line)
  end
  return table.concat(lines, '\n')
end

function t.cleanup()
  t.stop_servers()
  require('rawko.prompt').withdraw_all()
  require('rawko.state')._reset()
  require('rawko.output')._reset()
  require('rawko.config')._reset()
  if saved.autocmd then
    pcall(vim.api.nvim_del_autocmd, saved.autocmd)
    saved.autocmd = nil
  end
  vim.ui.select, vim.ui.input, vim.notify = saved.select, saved.input, saved.notify
  vim.g.rawko = nil
  vim.fn.setqflist({}, 'r')
  vim.cmd('silent! only!')
  vim.cmd('silent! %bwipeout!')
  local leftover = #t.clients()
  if leftover > 0 then
    error(('%d rawko server(s) still running after the test'):format(leftover))
  end
end

return t
