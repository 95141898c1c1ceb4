--- The web page (`web` option) with the real server: rawko is started with `serve --web ADDR`
--- only when asked, offers to open the page in the plugin's own question window, and Open hands
--- the page's address with its token to vim.ui.open (Neovim's `window/showDocument`).

local t = require('helpers')

--- Runs `fn(started, opened)` with vim.lsp.rpc.start recording each command it starts (in
--- `started`) and vim.ui.open recording each address it is given (in `opened`) instead of
--- opening a browser; both are put back afterwards.
---@param fn fun(started: string[][], opened: string[])
local function recording(fn)
  local start, open = vim.lsp.rpc.start, vim.ui.open
  local started, opened = {}, {}
  vim.lsp.rpc.start = function(cmd, ...)
    table.insert(started, vim.deepcopy(cmd))
    return start(cmd, ...)
  end
  vim.ui.open = function(uri)
    table.insert(opened, uri)
    -- What vim.ui.open returns: the opener's process, which succeeded.
    return {
      wait = function()
        return { code = 0, stdout = '', stderr = '' }
      end,
    },
      nil
  end
  local ok, err = pcall(fn, started, opened)
  vim.lsp.rpc.start, vim.ui.open = start, open
  if not ok then
    error(err, 0)
  end
end

---@param web boolean|string|nil
local function use(web)
  local ws = t.workspace()
  t.use(ws)
  local config = vim.g.rawko
  config.web = web
  vim.g.rawko = config
  return ws
end

t.test('with web, rawko offers the page and Open opens it with its token', function()
  use(true)
  recording(function(started, opened)
    vim.cmd('Rawko validate') -- starts rawko for the workspace
    local select = t.wait_select('rawko_message')
    t.eq(started, { { t.bin, 'serve', '--web', '127.0.0.1:0' } }, 'the command started')
    local lines = assert(t.float_lines('rawko_prompt'), 'the question window')
    local text = table.concat(lines, ' ')
    t.has(text, 'web page', 'the offer')
    local shown = text:match('http://127%.0%.0%.1:%d+/')
    t.ok(shown, 'the offer names the page: ' .. text)
    t.lacks(text, 'token', 'the offer on screen')
    t.eq(select.labels, { 'Open', 'Dismiss' }, 'the choices')
    t.eq(#opened, 0, 'nothing opened before the choice')
    t.choose(select, 'Open')
    t.wait('the page to be opened', function()
      return #opened > 0
    end)
    t.eq(#opened, 1, 'opened once')
    t.ok(vim.startswith(opened[1], shown .. '?token='), 'the page with its token: ' .. opened[1])
    t.ok(#opened[1] > #(shown .. '?token='), 'a token')
    if vim.fn.executable('curl') == 1 then
      -- The address is the real page: with the token it signs in (a redirect), without it not.
      local function status(url)
        local obj = vim
          .system({ 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', url }, { text = true })
          :wait(10000)
        return obj.stdout
      end
      t.eq(status(shown), '401', 'the page without the token')
      t.ok(status(opened[1]):match('^30[0-9]$'), 'the page with the token redirects')
    end
    t.wait('the question to close', function()
      return require('rawko.prompt').active() == nil
    end)
    t.ok(not t.noted('could not open'), 'no complaint that the page did not open')
  end)
end)

t.test('dismissing the offer opens nothing', function()
  use('127.0.0.1:0')
  recording(function(_, opened)
    vim.cmd('Rawko validate')
    t.choose(t.wait_select('rawko_message'), nil)
    t.wait('the question to close', function()
      return require('rawko.prompt').active() == nil
    end)
    -- A request answered after the dismissal: an Open would have been sent before its answer.
    vim.cmd('Rawko validate')
    t.wait('the second validation', function()
      local n = 0
      for _, note in ipairs(t.notes) do
        n = n + (note.message:find('every workflow is valid', 1, true) and 1 or 0)
      end
      return n == 2
    end)
    t.eq(opened, {}, 'nothing opened')
  end)
end)

--- The agent writes a file during Plan (read-only), then thinks for a minute.
local WRITE_IN_PLAN = [[
turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - text: "Still planning."
    delay_ms: 60000
]]

t.test('an approval does not wait behind the unanswered offer', function()
  local ws = use(true)
  recording(function(_, opened)
    local id = t.start('feature', ws:script('write', WRITE_IN_PLAN))
    t.wait_select('rawko_message')
    -- The offer stays unanswered; the blocked Write is asked all the same.
    local select = t.wait_select('rawko_approval')
    t.has(select.opts.prompt, 'Write', 'the approval is asked')
    t.eq(require('rawko.prompt').waiting(), 0, 'nothing waits behind it')
    t.choose(select, 'Deny')
    t.wait_state(id, 'running')
    t.eq(opened, {}, 'the withdrawn offer opened nothing')
  end)
end)

t.test('without web, rawko is started with plain serve', function()
  use(nil)
  recording(function(started)
    vim.cmd('Rawko validate')
    t.wait('rawko to start', function()
      return #t.clients() > 0 and t.clients()[1].initialized
    end)
    t.eq(started, { { t.bin, 'serve' } }, 'the command started')
  end)
end)

return t
