--- Configuration (vim.g.rawko and setup(), validated with clear messages), lazy loading, and
--- :checkhealth rawko.

local t = require('helpers')

t.test('the plugin file only defines :Rawko; the rest loads when used', function()
  t.eq(vim.fn.exists(':Rawko'), 2, ':Rawko exists')
  for name in pairs(package.loaded) do
    t.ok(not vim.startswith(name, 'rawko'), 'nothing of rawko is loaded yet, but ' .. name .. ' is')
  end
  local config = vim.lsp.config.rawko
  t.eq(type(config.cmd), 'function', 'lsp/rawko.lua gives the config, cmd starting vim.g.rawko.bin')
  t.eq(config.root_markers, { '.rawko', '.pi', '.git' }, 'its root markers')
  t.eq(type(config.handlers['rawko/approveToolCall']), 'function', 'its handlers')
  t.eq(package.loaded['rawko.handlers'], nil, 'the handlers load when first called')
end)

t.test('defaults, vim.g.rawko over them, and setup() over that', function()
  local config = require('rawko.config')
  t.eq(config.get(), config.defaults, 'the defaults')
  vim.g.rawko = { bin = '/opt/rawko', output = { split = 'vertical split' } }
  local got = config.get()
  t.eq(got.bin, '/opt/rawko', 'from vim.g.rawko')
  t.eq(got.output.split, 'vertical split', 'a nested option')
  t.eq(got.output.open_on_start, true, 'the other nested options keep their defaults')
  t.eq(
    require('rawko').setup({ output = { open_on_start = false }, task = { workflow = 'feature' } }),
    true,
    'valid'
  )
  got = config.get()
  t.eq(
    { got.bin, got.output.split, got.output.open_on_start, got.task.workflow },
    { '/opt/rawko', 'vertical split', false, 'feature' },
    'merged'
  )
end)

t.test(
  'a bad configuration is named option by option; those options keep their defaults',
  function()
    vim.g.rawko = {
      bin = 3,
      colour = 'red',
      output = { open_on_start = 'yes' },
      settings = { approvalTimeoutSeconds = '60', somethingNew = true },
      task = { workflow = 1 },
      approval = { max_input_lines = 0 },
      statusline = { max_width = 0 },
    }
    local config = require('rawko.config')
    local _, problems = config.resolve()
    t.eq(problems, {
      'rawko.approval.max_input_lines: expected a number of at least 1',
      'rawko.bin: expected string, got number',
      'rawko.colour: unknown option',
      'rawko.output.open_on_start: expected boolean, got string',
      'rawko.statusline.max_width: expected columns, or a fraction above 0',
      'rawko.task.workflow: expected string, got number',
    }, 'every problem, and none of the settings (rawko checks those itself)')
    local got = config.get()
    t.eq(got.output, config.defaults.output, 'the default in place of a bad option')
    t.eq(got.bin, 'rawko', 'the default bin')
    t.eq(got.colour, nil, 'an unknown option goes')
    t.eq(
      got.settings,
      { approvalTimeoutSeconds = '60', somethingNew = true },
      'the settings go to rawko as given'
    )
    t.eq(select(2, config.check(got)), {}, 'what is used is valid')
    config.get()
    local errors = vim.tbl_filter(function(n)
      return n.level == vim.log.levels.ERROR
    end, t.notes)
    t.eq(#errors, 1, 'told once')
    t.has(
      errors[1].message,
      'rawko: invalid configuration:\n  rawko.approval.max_input_lines',
      'the message'
    )
    t.has(errors[1].message, 'rawko: using the defaults of these options', 'the message')
  end
)

t.test('rawko reports a bad setting itself and keeps its default', function()
  local ws = t.workspace()
  t.use(ws, { settings = { approvalTimeoutSeconds = '60' } })
  require('rawko.client').with_client(function() end)
  t.wait('rawko to say what is wrong', function()
    return t.noted('showMessage: rawko config: initializationOptions: approvalTimeoutSeconds')
  end)
  t.ok(t.noted('found "60"; the default is used'), 'the value and what rawko does instead')
end)

t.test('web: off by default, true for a free loopback port, or an address', function()
  local config = require('rawko.config')
  t.eq(config.serve_args(config.get()), { 'serve' }, 'no page by default')
  vim.g.rawko = { web = true }
  t.eq(config.serve_args(config.get()), { 'serve', '--web', '127.0.0.1:0' }, 'true')
  vim.g.rawko = { web = ' 127.0.0.1:8080 ' }
  t.eq(config.serve_args(config.get()), { 'serve', '--web', '127.0.0.1:8080' }, 'an address')
  vim.g.rawko = { web = 8080 }
  t.eq(select(2, config.resolve()), { 'rawko.web: expected boolean or string, got number' })
  vim.g.rawko = { web = '' }
  t.eq(select(2, config.resolve()), {
    'rawko.web: expected an address such as 127.0.0.1:0 (or true, or false), got an empty string',
  })
  t.eq(config.serve_args(config.get()), { 'serve' }, 'a bad value: no page')
end)

t.test('team.nats: none by default, or the URLs rawko serve --nats is given', function()
  local config = require('rawko.config')
  t.eq(config.get().team, {}, 'no team by default')
  vim.g.rawko = { team = { nats = ' nats://nats1:4222,nats://nats2:4222 ' } }
  t.eq(
    config.serve_args(config.get()),
    { 'serve', '--nats', 'nats://nats1:4222,nats://nats2:4222' },
    'the URLs, trimmed'
  )
  vim.g.rawko = { web = true, team = { nats = 'nats://127.0.0.1:4222' } }
  t.eq(
    config.serve_args(config.get()),
    { 'serve', '--web', '127.0.0.1:0', '--nats', 'nats://127.0.0.1:4222' },
    'after --web'
  )
  vim.g.rawko = { team = { nats = 4222 } }
  t.eq(select(2, config.resolve()), { 'rawko.team.nats: expected string, got number' })
  t.eq(config.serve_args(config.get()), { 'serve' }, 'a bad value: no team')
  vim.g.rawko = { team = 'nats://127.0.0.1:4222' }
  t.eq(select(2, config.resolve()), { 'rawko.team: expected table, got string' })
  vim.g.rawko = { team = { nats = '  ', url = 'nats://127.0.0.1:4222' } }
  t.eq(select(2, config.resolve()), {
    'rawko.team.nats: expected a NATS URL such as nats://127.0.0.1:4222 (or a comma-separated '
      .. 'list of them), got an empty string',
    'rawko.team.url: unknown option',
  })
  t.eq(config.serve_args(config.get()), { 'serve' }, 'an empty string: no team')
end)

t.test('with team.nats, rawko is started with --nats, and serves this editor meanwhile', function()
  local ws = t.workspace()
  t.use(ws)
  local options = vim.g.rawko
  -- Nothing listens on port 1: rawko keeps trying to reach the team and serves the editor
  -- meanwhile.
  options.team = { nats = 'nats://127.0.0.1:1' }
  vim.g.rawko = options
  local start, started = vim.lsp.rpc.start, {}
  vim.lsp.rpc.start = function(cmd, ...)
    table.insert(started, vim.deepcopy(cmd))
    return start(cmd, ...)
  end
  local ok, err = pcall(function()
    local ready, failed
    require('rawko.client').with_client(function(client, why)
      ready, failed = client, why
    end)
    t.wait('rawko to answer initialize', function()
      return ready or failed
    end)
    t.eq(failed, nil, 'rawko started')
    t.eq(started, { { t.bin, 'serve', '--nats', 'nats://127.0.0.1:1' } }, 'the command started')
  end)
  vim.lsp.rpc.start = start
  if not ok then
    error(err, 0)
  end
end)

t.test('setup() with bad options returns false and says why', function()
  t.eq(require('rawko').setup({ statusline = { format = 'not a function' } }), false, 'refused')
  t.ok(t.noted('rawko.statusline.format: expected function, got string'), 'the reason')
  t.eq(require('rawko').setup('bin'), false, 'not a table')
  t.ok(t.noted('setup() expects a table of options, got string'), 'the reason')
  vim.g.rawko = 'rawko'
  local _, problems = require('rawko.config').resolve()
  t.eq(problems[1], 'vim.g.rawko: expected table, got string', 'vim.g.rawko itself')
end)

--- Runs :checkhealth rawko; returns its lines.
local function checkhealth()
  vim.cmd('silent checkhealth rawko')
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  if #vim.api.nvim_list_tabpages() > 1 then
    vim.cmd('tabclose')
  end
  vim.api.nvim_buf_delete(buf, { force = true })
  return lines
end

--- An executable shell script standing in for rawko.
local function fake_bin(ws, body)
  local path = ws:write('bin/rawko', '#!/bin/sh\n' .. body .. '\n')
  vim.fn.setfperm(path, 'rwxr-xr-x')
  return path
end

t.test(
  ':checkhealth rawko finds the binary and its version, and checks the configuration',
  function()
    local ws = t.workspace()
    t.use(ws)
    local text = table.concat(checkhealth(), '\n')
    t.has(text, 'OK the configuration (vim.g.rawko and setup()) is valid', 'the configuration')
    t.has(text, 'OK found ' .. t.bin, 'the binary')
    t.has(text, 'OK rawko 0.1.0', 'the version')
    t.has(text, 'OK vim.lsp.config.rawko found (lsp/rawko.lua)', 'the LSP config')
    t.has(text, 'no rawko server runs now', 'no server')
    t.lacks(text, 'ERROR', 'no error')
    -- With a server running.
    table.insert(t.inputs, 'x')
    require('rawko.client').with_client(function() end)
    t.wait('the server', function()
      return #vim.lsp.get_clients({ name = 'rawko' }) == 1
    end)
    text = table.concat(checkhealth(), '\n')
    t.has(text, 'rawko 0.1.0 for ' .. ws.dir, 'the running server and its workspace')
  end
)

t.test(
  ':checkhealth rawko reports a missing binary, a bad version and a bad configuration',
  function()
    local ws = t.workspace()
    vim.g.rawko = { bin = 'rawko-that-is-not-there' }
    local text = table.concat(checkhealth(), '\n')
    t.has(text, 'ERROR `rawko-that-is-not-there` is not an executable on $PATH', 'missing')

    vim.g.rawko = { bin = fake_bin(ws, 'echo "rawko 0.0.9"') }
    text = table.concat(checkhealth(), '\n')
    t.has(text, 'ERROR rawko 0.0.9 is older than 0.1.0', 'too old')

    vim.g.rawko = { bin = fake_bin(ws, 'echo boom >&2; exit 3') }
    text = table.concat(checkhealth(), '\n')
    t.has(text, 'exited with 3: boom', 'a failing --version')

    vim.g.rawko = { bin = fake_bin(ws, 'echo "hello"') }
    text = table.concat(checkhealth(), '\n')
    t.has(text, 'said "hello", not "rawko X.Y.Z"', 'an unexpected --version')

    vim.g.rawko = { bin = t.bin, output = { split = false } }
    text = table.concat(checkhealth(), '\n')
    t.has(text, 'ERROR rawko.output.split: expected string, got boolean', 'the configuration')
    t.has(text, 'OK found ' .. t.bin, 'the other options still hold')
  end
)

t.test('doc/rawko.txt is valid help: its tags are unique and :help finds them', function()
  local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, 'S').source:sub(2)))
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/doc', 'p')
  local doc = vim.fs.dirname(here) .. '/doc/rawko.txt'
  vim.fn.writefile(vim.fn.readfile(doc, 'b'), dir .. '/doc/rawko.txt', 'b')
  vim.cmd.helptags(vim.fn.fnameescape(dir .. '/doc')) -- fails on a duplicate tag
  local tags = {}
  for _, line in ipairs(vim.fn.readfile(dir .. '/doc/tags')) do
    tags[vim.split(line, '\t')[1]] = true
  end
  for _, tag in ipairs({
    'rawko',
    ':Rawko',
    ':Rawko-start',
    ':Rawko-tasks',
    ':Rawko-workflow',
    'vim.g.rawko',
    'rawko.statusline()',
    'rawko-approvals',
    'rawko-health',
    'RawkoStatus',
  }) do
    t.ok(tags[tag], 'the tag ' .. tag)
  end
  -- Every |link| points at a tag of this file or of Neovim's help.
  vim.opt.runtimepath:prepend(dir)
  for _, file in ipairs(vim.api.nvim_get_runtime_file('doc/tags', true)) do
    for _, line in ipairs(vim.fn.readfile(file)) do
      tags[vim.split(line, '\t')[1]] = true
    end
  end
  local text = table.concat(vim.fn.readfile(doc), '\n')
  for link in text:gmatch('|([^|%s]+)|') do
    t.ok(tags[link], 'a tag for |' .. link .. '|')
  end
  vim.cmd.help(':Rawko-start')
  t.eq(vim.fn.expand('%:t'), 'rawko.txt', ':help :Rawko-start opens rawko.txt')
  vim.cmd.helpclose()
end)

return t
