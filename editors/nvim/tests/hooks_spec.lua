--- Hooks with the real server: a workspace whose .rawko/config.json has hooks asks whether to
--- trust it (rawko/trustWorkspace), and its hooks run only when trusted.

local t = require('helpers')

--- Whether the rawko binary knows workspace trust (`rawko trust`).
local function knows_trust()
  local obj = vim.system({ t.bin, 'trust', '--help' }, { text = true }):wait(5000)
  return obj.code == 0
end

--- A workspace whose PreExecutionStart hook touches `marker`.
local function hooked()
  local ws = t.workspace()
  local marker = ws.home .. '/hook-ran'
  ws:write(
    '.rawko/config.json',
    vim.json.encode({
      hooks = {
        PreExecutionStart = {
          { type = 'command', command = 'touch ' .. marker .. ' && echo hook says hi' },
        },
      },
    })
  )
  t.use(ws)
  return ws, marker
end

local DONE = 'turns:\n  - text: "Done."\n'

t.test('a trusted workspace runs its hooks', function()
  if not knows_trust() then
    t.skip('this rawko has no workspace trust')
  end
  local ws, marker = hooked()
  vim.cmd('Rawko validate') -- starts rawko for the workspace
  local select = t.wait_select('rawko_trust')
  local p = assert(require('rawko.prompt').active())
  local lines = vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
  t.eq(lines[1], 'Workspace ' .. ws.dir, 'the workspace')
  t.ok(t.find(lines, '  PreExecutionStart: touch ' .. marker), 'the hook: ' .. vim.inspect(lines))
  t.eq(select.labels, { 'Trust and run hooks', "Don't trust" }, 'the choices')
  t.choose(select, 'Trust and run hooks')
  local id = t.start('feature', ws:script('done', DONE))
  t.wait_finished(id)
  t.ok(vim.uv.fs_stat(marker), 'the hook ran')
  local line = t.find(require('rawko.output').lines(), '🪝 PreExecutionStart hook')
  t.ok(line, 'the hook output is shown')
  t.has(require('rawko.output').lines()[line], 'hook says hi', 'what the hook printed')
end)

t.test('a workspace not trusted does not run its hooks, and rawko says so', function()
  if not knows_trust() then
    t.skip('this rawko has no workspace trust')
  end
  local ws, marker = hooked()
  vim.cmd('Rawko validate')
  t.choose(t.wait_select('rawko_trust'), "Don't trust")
  t.wait('rawko to say the hooks do not run', function()
    return t.noted('not trusted')
  end)
  local id = t.start('feature', ws:script('done', DONE))
  t.wait_finished(id)
  t.ok(not vim.uv.fs_stat(marker), 'the hook did not run')
end)

return t
