--- Resuming: a task whose server stopped is shown as interrupted, and :Rawko resume resumes it
--- (or a task the user interrupted) where it stopped.

local t = require('helpers')

--- Reads, then takes a while before it moves on to Implement.
local SLOW_SECOND_TURN = [[
turns:
  - text: "Reading the project first."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "The plan is ready."
    delay_ms: 1500
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Implementing."
    delay_ms: 60000
]]

t.test('a task whose server stopped resumes with :Rawko resume', function()
  local ws = t.workspace()
  t.use(ws)
  local id = t.start('feature', ws:script('slow', SLOW_SECOND_TURN), 'Add a --shout flag')
  t.wait_output('← # greet')
  -- The server dies mid-turn (as when Neovim or the machine crashes). A graceful `shutdown`
  -- would cancel the task: rawko cancels every task on shutdown.
  for _, client in ipairs(t.clients()) do
    client:stop(true)
  end
  t.wait('the server to be gone', function()
    return #t.clients() == 0
  end)
  t.wait_state(id, 'interrupted')
  t.eq(t.statusline(), 'Feature > 📋 Plan [1/4] — rawko stopped', 'the statusline')

  vim.cmd('Rawko resume')
  local select = t.wait_select('rawko_task')
  t.eq(#select.labels, 1, 'one task to resume: ' .. vim.inspect(select.labels))
  t.eq(
    select.labels[1],
    ('interrupted · Add a --shout flag · Feature > 📋 Plan [1/4] (%s)'):format(id),
    'the task, where it stopped'
  )
  t.eq(#t.clients(), 1, 'a new server runs')
  t.choose(select, id)
  t.wait('the task to reach Implement', function()
    return t.statusline() == 'Feature > 🛠️ Implement [2/4]'
  end)
  t.eq(t.task(id).state, 'running', 'the task runs again')
  t.ok(t.noted('resumed ' .. id), 'the user is told')
end)

t.test(':Rawko resume resumes a task the user interrupted', function()
  local ws = t.workspace()
  t.use(ws, { settings = { countdownTickMillis = 5000 } })
  local id = t.start(
    'feature',
    ws:script(
      'stops',
      [[
turns:
  - text: "I think that is all."
  - text: "Back to the plan."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Planning."
    delay_ms: 60000
]]
    )
  )
  t.wait('the countdown', function()
    return t.statusline():find('⏳', 1, true)
  end)
  vim.cmd('Rawko interrupt')
  t.wait_state(id, 'blocked')
  vim.cmd('Rawko resume')
  local select = t.wait_select('rawko_task')
  t.has(select.labels[1], 'blocked · Add a --shout flag to greet.sh', 'the blocked task')
  t.choose(select, id)
  t.wait_output('→ Read README.md')
  t.eq(t.task(id).state, 'running', 'the task goes on')
end)

t.test(':Rawko resume with nothing to resume says so', function()
  local ws = t.workspace()
  t.use(ws)
  vim.cmd('Rawko resume')
  t.wait('the answer', function()
    return t.noted('no interrupted task to resume')
  end)
  t.eq(#t.selects, 0, 'nothing to choose from')
end)

return t
