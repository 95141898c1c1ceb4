--- The test runner: `nvim --headless --clean -l tests/run.lua [PATTERN…]`.
---
--- Runs each `tests/*_spec.lua` (those whose name contains one of the PATTERNs, when given) in a
--- Neovim of its own (tests/harness.lua), so that no state leaks from one file into another,
--- with fresh XDG directories, and `stylua --check` when $RAWKO_STYLUA names stylua. Prints each
--- test's result as it finishes, then `N passed, N failed` (with `, N skipped` when a test found
--- the rawko binary lacking what it tests); exits 1 when anything failed.
---
--- Environment: RAWKO_BIN (the rawko binary, required), RAWKO_NVIM (the Neovim to run the files
--- with; default this one), RAWKO_STYLUA (optional), RAWKO_REPO (the repository; default found
--- from this file).

local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, 'S').source:sub(2)))
local plugin = vim.fs.dirname(here)
local repo = os.getenv('RAWKO_REPO') or vim.fs.dirname(vim.fs.dirname(plugin))
local nvim = os.getenv('RAWKO_NVIM') or vim.v.progpath
local started = vim.uv.hrtime()

--- How long one spec file may run before it counts as hung.
local FILE_TIMEOUT_MS = 120000

local function out(line)
  io.stdout:write(line, '\n')
  io.stdout:flush()
end

local passed, failed, skipped = 0, 0, 0

local patterns = {}
for _, a in ipairs(_G.arg or {}) do
  table.insert(patterns, a)
end

local function wanted(name)
  if #patterns == 0 then
    return true
  end
  for _, pattern in ipairs(patterns) do
    if name:find(pattern, 1, true) then
      return true
    end
  end
  return false
end

-- Formatting: stylua --check over the plugin.
local stylua = os.getenv('RAWKO_STYLUA')
if stylua and stylua ~= '' and wanted('stylua') then
  local obj = vim
    .system({ stylua, '--config-path', plugin .. '/.stylua.toml', '--check', plugin }, { text = true })
    :wait(60000)
  if obj.code == 0 then
    passed = passed + 1
    out('ok   stylua --check editors/nvim')
  else
    failed = failed + 1
    out('FAIL stylua --check editors/nvim')
    for line in vim.gsplit(vim.trim((obj.stdout or '') .. (obj.stderr or '')), '\n') do
      out('     ' .. line)
    end
  end
end

if not os.getenv('RAWKO_BIN') then
  out('error: RAWKO_BIN must name the rawko binary')
  out(('%d passed, %d failed'):format(passed, failed + 1))
  os.exit(1)
end

local specs = vim.fn.glob(here .. '/*_spec.lua', false, true)
table.sort(specs)

for _, spec in ipairs(specs) do
  local name = vim.fs.basename(spec)
  if wanted(name) then
    -- Fresh XDG directories (and so a fresh task store and config) for each file.
    local base = vim.fn.tempname()
    local env = {}
    for _, dir in ipairs({ 'config', 'data', 'state', 'cache', 'home', 'pi' }) do
      vim.fn.mkdir(base .. '/' .. dir, 'p')
    end
    env.XDG_CONFIG_HOME = base .. '/config'
    env.XDG_DATA_HOME = base .. '/data'
    env.XDG_STATE_HOME = base .. '/state'
    env.XDG_CACHE_HOME = base .. '/cache'
    env.HOME = base .. '/home'
    env.PI_CODING_AGENT_DIR = base .. '/pi'
    env.RAWKO_REPO = repo
    env.RAWKO_TEST_TMP = base
    local file_passed, file_failed, file_skipped, finished = 0, 0, 0, false
    local partial = ''
    local function on_line(line)
      local p, f, s = line:match('^# passed (%d+) failed (%d+) skipped (%d+)$')
      if p then
        file_passed, file_failed, file_skipped = tonumber(p), tonumber(f), tonumber(s)
        finished = true
      else
        out(line)
      end
    end
    local obj = vim
      .system({ nvim, '--headless', '--clean', '-l', here .. '/harness.lua', spec }, {
        env = env,
        text = true,
        stdout = function(_, data)
          if not data then
            return
          end
          partial = partial .. data
          while true do
            local nl = partial:find('\n', 1, true)
            if not nl then
              break
            end
            on_line(partial:sub(1, nl - 1))
            partial = partial:sub(nl + 1)
          end
        end,
        stderr = function(_, data)
          if data and data ~= '' then
            io.stdout:write(data)
          end
        end,
      })
      :wait(FILE_TIMEOUT_MS)
    if partial ~= '' then
      on_line(partial)
    end
    passed = passed + file_passed
    failed = failed + file_failed
    skipped = skipped + file_skipped
    if not finished then
      failed = failed + 1
      out(
        ('FAIL %s did not finish (exit %s, signal %s)'):format(
          name,
          tostring(obj.code),
          tostring(obj.signal)
        )
      )
    end
    vim.fn.delete(base, 'rf')
  end
end

out(('%d tests in %.1f s'):format(passed + failed + skipped, (vim.uv.hrtime() - started) / 1e9))
if skipped > 0 then
  out(('%d passed, %d failed, %d skipped'):format(passed, failed, skipped))
else
  out(('%d passed, %d failed'):format(passed, failed))
end
os.exit(failed == 0 and passed > 0 and 0 or 1)
