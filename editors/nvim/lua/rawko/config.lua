--- The plugin's configuration: defaults, merged with `vim.g.rawko`, then with what `setup()` was
--- given, and validated with messages that name the option, what it expects and what it got.
--- `settings` go to rawko as they are: rawko checks them and reports a bad value itself
--- (`window/showMessage`, keeping that setting's default).

local M = {}

---@class rawko.Config
---@field bin string the rawko executable: a name on $PATH or a path
---@field settings table<string, any> rawko's settings, sent as the server's initializationOptions
---@field task rawko.TaskDefaults what `:Rawko start` puts into `rawko/startTask`
---@field output rawko.OutputConfig
---@field statusline rawko.StatuslineConfig
---@field approval rawko.ApprovalConfig

---@class rawko.TaskDefaults
---@field workflow? string the workflow to run without asking
---@field agent? string
---@field provider? string
---@field model? string
---@field script? string with provider "scripted": the script of model turns

---@class rawko.OutputConfig
---@field open_on_start boolean open the output window when a task starts
---@field split string the command that opens the output window
---@field show_context boolean show the phase context rawko injects before each agent turn in full

---@class rawko.StatuslineConfig
---@field format? fun(task: rawko.Task?, others: integer): string
---@field notify_reasons boolean tell with vim.notify why a task's state changed (e.g. an approval timed out)

---@class rawko.ApprovalConfig
---@field border string|string[] the border of the approval window
---@field max_input_lines integer how many lines of the tool's input the approval window shows

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
  statusline = {
    format = nil,
    notify_reasons = true,
  },
  approval = {
    border = 'rounded',
    max_input_lines = 20,
  },
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
  statusline = { format = '?function', notify_reasons = 'boolean' },
  approval = { border = 'string|table', max_input_lines = 'number' },
}

local function type_of(value)
  if type(value) == 'table' and vim.islist(value) and #value > 0 then
    return 'list'
  end
  return type(value)
end

--- Checks `value` against `spec`; appends one message per problem to `problems`.
---@param path string
---@param value any
---@param spec string|table
---@param problems string[]
local function check(path, value, spec, problems)
  if type(spec) == 'string' then
    local optional, types = spec:match('^(%??)(.*)$')
    local fits = vim.tbl_contains(vim.split(types, '|', { plain = true }), type(value))
    if not fits and (value ~= nil or optional == '') then
      local want = types:gsub('|', ' or ')
      table.insert(problems, ('%s: expected %s, got %s'):format(path, want, type_of(value)))
    end
  elseif type(value) ~= 'table' then
    table.insert(problems, ('%s: expected table, got %s'):format(path, type_of(value)))
  else
    for key in pairs(value) do
      if spec[key] == nil then
        table.insert(problems, ('%s.%s: unknown option'):format(path, tostring(key)))
      end
    end
    for key, sub in pairs(spec) do
      check(path .. '.' .. key, value[key], sub, problems)
    end
  end
end

--- The problems of a whole configuration, one message each, sorted; empty when it is valid.
---@param config table
---@return string[]
function M.problems(config)
  local problems = {}
  check('rawko', config, schema, problems)
  if type(config.bin) == 'string' and config.bin == '' then
    table.insert(problems, 'rawko.bin: expected the rawko executable, got an empty string')
  end
  if type(config.approval) == 'table' then
    local n = config.approval.max_input_lines
    if type(n) == 'number' and n < 1 then
      table.insert(problems, 'rawko.approval.max_input_lines: expected a number of at least 1')
    end
  end
  table.sort(problems)
  return problems
end

--- What `setup()` was given.
---@type table
local from_setup = {}

--- The options the user gave: `vim.g.rawko`, then `setup()`'s.
---@return table
function M.user_options()
  local g = type(vim.g.rawko) == 'table' and vim.deepcopy(vim.g.rawko) or {}
  return vim.tbl_deep_extend('force', g, from_setup)
end

--- The merged configuration and its problems (as is: see `get()` for the one to use).
---@return rawko.Config config, string[] problems
function M.resolve()
  local problems = {}
  local g = vim.g.rawko
  if g ~= nil and type(g) ~= 'table' then
    table.insert(problems, ('vim.g.rawko: expected table, got %s'):format(type(g)))
  end
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), M.user_options())
  vim.list_extend(problems, M.problems(merged))
  return merged, problems
end

--- Puts the default back in place of each option a problem names (an unknown option goes).
---@param config table
---@param problems string[]
---@return rawko.Config
function M.repair(config, problems)
  for _, problem in ipairs(problems) do
    local path = problem:match('^rawko%.([^:]+):')
    if path then
      local keys = vim.split(path, '.', { plain = true })
      local parent = config
      for i = 1, #keys - 1 do
        parent = type(parent) == 'table' and parent[keys[i]] or nil
      end
      if type(parent) == 'table' then
        parent[keys[#keys]] = vim.deepcopy(vim.tbl_get(M.defaults, unpack(keys)))
      end
    end
  end
  return config
end

local warned = {} ---@type table<string, boolean>

--- The configuration to use: the options given, with the default in place of each one that has
--- a problem. The problems are reported once each with `vim.notify`.
---@return rawko.Config
function M.get()
  local config, problems = M.resolve()
  if #problems == 0 then
    return config
  end
  local message = M.format_problems(problems)
  if not warned[message] then
    warned[message] = true
    vim.notify(message .. '\nrawko: using the defaults of these options', vim.log.levels.ERROR)
  end
  return M.repair(config, problems)
end

---@param problems string[]
---@return string
function M.format_problems(problems)
  return 'rawko: invalid configuration:\n  ' .. table.concat(problems, '\n  ')
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
    vim.notify(M.format_problems(problems), vim.log.levels.ERROR)
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
