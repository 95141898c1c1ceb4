--- The plugin's configuration: defaults, merged with `vim.g.rawko`, then with what `setup()` was
--- given, and validated with messages that name the option, what it expects and what it got.
--- `settings` go to rawko as they are: rawko checks them and reports a bad value itself
--- (`window/showMessage`, keeping that setting's default).

local M = {}

--- The options, as `:help rawko-config` describes them.
---@class rawko.Config
---@field bin string
---@field settings table<string, any>
---@field task {workflow?: string, agent?: string, provider?: string, model?: string, script?: string}
---@field output {open_on_start: boolean, split: string, show_context: boolean}
---@field statusline {format?: fun(task: rawko.Task?, others: integer): string, max_width: number, notify_reasons: boolean}
---@field approval {border: string|string[], max_input_lines: integer}
---@field web boolean|string
---@field team {nats?: string}

---@type rawko.Config
M.defaults = {
  bin = 'rawko',
  settings = {},
  task = {},
  output = {
    open_on_start = true,
    split = 'botright 12split',
    show_context = false,
  },
  statusline = { max_width = 0.5, notify_reasons = true }, -- and `format`, none by default
  approval = {
    border = 'rounded',
    max_input_lines = 20,
  },
  web = false, -- true: the web page on a free loopback port; a string: on that address
  team = { nats = nil }, -- nats: the team's NATS URL(s), to show its tasks (docs/team.md)
}

--- What each option must be: its Lua types (`?` first: it may be missing), or a table of
--- sub-options.
local schema = {
  bin = 'string',
  settings = 'table',
  task = {
    workflow = '?string',
    agent = '?string',
    provider = '?string',
    model = '?string',
    script = '?string',
  },
  output = { open_on_start = 'boolean', split = 'string', show_context = 'boolean' },
  statusline = { format = '?function', max_width = 'number', notify_reasons = 'boolean' },
  approval = { border = 'string|table', max_input_lines = 'number' },
  web = 'boolean|string',
  team = { nats = '?string' },
}

local function type_of(value)
  if type(value) == 'table' and vim.islist(value) and #value > 0 then
    return 'list'
  end
  return type(value)
end

--- Checks `value` against `spec`; appends one message per problem to `problems`. Returns what to
--- use: `value`, with `default` in place of each option that has a problem, unknown ones left out.
---@param path string
---@param value any
---@param spec string|table
---@param default any
---@param problems string[]
---@return any
local function check(path, value, spec, default, problems)
  local function bad(expected)
    table.insert(problems, ('%s: expected %s, got %s'):format(path, expected, type_of(value)))
    return vim.deepcopy(default)
  end
  if type(spec) == 'string' then
    local optional, types = spec:match('^(%??)(.*)$')
    if value == nil and optional == '?' then
      return nil
    end
    if vim.tbl_contains(vim.split(types, '|', { plain = true }), type(value)) then
      return value
    end
    return bad((types:gsub('|', ' or ')))
  elseif type(value) ~= 'table' then
    return bad('table')
  end
  for key in pairs(value) do
    if spec[key] == nil then
      table.insert(problems, ('%s.%s: unknown option'):format(path, tostring(key)))
    end
  end
  local checked = {}
  for key, sub in pairs(spec) do
    checked[key] = check(path .. '.' .. key, value[key], sub, (default or {})[key], problems)
  end
  return checked
end

--- Checks a whole configuration. Returns what to use (the default in place of each option that
--- has a problem, unknown options left out) and the problems, one message each, sorted.
---@param config table
---@return rawko.Config config, string[] problems
function M.check(config)
  local problems = {}
  local checked = check('rawko', config, schema, M.defaults, problems)
  if checked.bin == '' then
    table.insert(problems, 'rawko.bin: expected the rawko executable, got an empty string')
    checked.bin = M.defaults.bin
  end
  if checked.approval.max_input_lines < 1 then
    table.insert(problems, 'rawko.approval.max_input_lines: expected a number of at least 1')
    checked.approval.max_input_lines = M.defaults.approval.max_input_lines
  end
  if checked.statusline.max_width <= 0 then
    table.insert(problems, 'rawko.statusline.max_width: expected columns, or a fraction above 0')
    checked.statusline.max_width = M.defaults.statusline.max_width
  end
  if type(checked.web) == 'string' and vim.trim(checked.web) == '' then
    table.insert(
      problems,
      'rawko.web: expected an address such as 127.0.0.1:0 (or true, or false), got an empty string'
    )
    checked.web = M.defaults.web
  end
  if type(checked.team.nats) == 'string' and vim.trim(checked.team.nats) == '' then
    table.insert(
      problems,
      'rawko.team.nats: expected a NATS URL such as nats://127.0.0.1:4222 (or a comma-separated '
        .. 'list of them), got an empty string'
    )
    checked.team.nats = M.defaults.team.nats
  end
  table.sort(problems)
  return checked, problems
end

--- The address of the web page, when `config.web` asks for one: `true` is a free port on
--- 127.0.0.1.
---@param config rawko.Config
---@return string?
function M.web_address(config)
  if config.web == true then
    return '127.0.0.1:0'
  elseif type(config.web) == 'string' then
    return vim.trim(config.web)
  end
  return nil
end

--- The team's NATS server(s), when `config.team.nats` names them: one URL or a
--- comma-separated list, trimmed.
---@param config rawko.Config
---@return string?
function M.team_nats(config)
  local nats = config.team and config.team.nats
  if type(nats) == 'string' and vim.trim(nats) ~= '' then
    return vim.trim(nats)
  end
  return nil
end

--- The arguments `rawko` is started with: `serve`, `--web ADDR` when `config.web` asks for the
--- web page of the tasks and their approvals, and `--nats URLS` when `config.team.nats` names
--- the team's NATS server(s), whose tasks and blocked calls then show here too (docs/team.md).
---@param config rawko.Config
---@return string[]
function M.serve_args(config)
  local args = { 'serve' }
  local addr = M.web_address(config)
  if addr then
    vim.list_extend(args, { '--web', addr })
  end
  local nats = M.team_nats(config)
  if nats then
    vim.list_extend(args, { '--nats', nats })
  end
  return args
end

--- What `setup()` was given.
---@type table
local from_setup = {}

--- The configuration to use — the defaults, `vim.g.rawko` over them, then `setup()`'s options,
--- checked — and its problems.
---@return rawko.Config config, string[] problems
function M.resolve()
  local g = vim.g.rawko
  local options = type(g) == 'table' and g or {}
  local config, problems =
    M.check(vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), options, from_setup))
  if g ~= nil and type(g) ~= 'table' then
    table.insert(problems, 1, ('vim.g.rawko: expected table, got %s'):format(type(g)))
  end
  return config, problems
end

---@param problems string[]
---@return string
local function format_problems(problems)
  return 'rawko: invalid configuration:\n  ' .. table.concat(problems, '\n  ')
end

local warned = {} ---@type table<string, boolean>

--- The configuration to use (see `resolve()`). Its problems are reported once with `vim.notify`.
---@return rawko.Config
function M.get()
  local config, problems = M.resolve()
  local message = format_problems(problems)
  if #problems > 0 and not warned[message] then
    warned[message] = true
    vim.notify(message .. '\nrawko: using the defaults of these options', vim.log.levels.ERROR)
  end
  return config
end

--- Takes the options of `require('rawko').setup()`, merged over earlier ones. Returns whether
--- the resulting configuration is valid; when it is not, says why with `vim.notify`.
---@param opts? table
---@return boolean
function M.setup(opts)
  if opts ~= nil and type(opts) ~= 'table' then
    vim.notify(
      ('rawko: setup() expects a table of options, got %s'):format(type(opts)),
      vim.log.levels.ERROR
    )
    return false
  end
  from_setup = vim.tbl_deep_extend('force', from_setup, opts or {})
  local _, problems = M.resolve()
  if #problems > 0 then
    vim.notify(format_problems(problems), vim.log.levels.ERROR)
    return false
  end
  return true
end

--- Forgets what `setup()` was given (for tests).
function M._reset()
  from_setup = {}
  warned = {}
end

return M
