--- The countdown: an agent that stops before the workflow is done gets `⏳ Auto-continuing in
--- 3s`, 2s, 1s in the statusline, then the reminder; :Rawko interrupt stops it, and the task
--- waits for the user.

local t = require('helpers')

--- The agent stops during Plan, then (after the reminder or the user) goes on.
local STOPS_EARLY = [[
turns:
  - text: "I think that is all."
  - text: "Back to the plan."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Planning."
    delay_ms: 60000
]]

t.test('the statusline counts down 3, 2, 1, then the reminder is sent', function()
  local ws = t.workspace()
  t.use(ws, { settings = { countdownTickMillis = 150 } })
  local id = t.start('feature', ws:script('stops', STOPS_EARLY))
  t.wait_output('→ Read README.md')
  -- The statuslines drawn, each change once (a redraw may change nothing, e.g. after getTask).
  local drawn = {}
  for _, line in ipairs(t.statuslines) do
    if line ~= drawn[#drawn] then
      table.insert(drawn, line)
    end
  end
  local ticks = t.in_order(drawn, {
    'Feature > 📋 Plan [1/4] ⏳ Auto-continuing in 3s',
    'Feature > 📋 Plan [1/4] ⏳ Auto-continuing in 2s',
    'Feature > 📋 Plan [1/4] ⏳ Auto-continuing in 1s',
  }, 'the countdown in the statusline')
  t.eq(ticks[2] - ticks[1], 1, 'a redraw for each tick')
  t.eq(ticks[3] - ticks[2], 1, 'a redraw for each tick')
  t.has(drawn[ticks[3] + 1], 'Feature > 📋 Plan [1/4]', 'after the countdown')
  t.lacks(drawn[ticks[3] + 1], '⏳', 'after the countdown')
  t.in_order(require('rawko.output').lines(), {
    'I think that is all.',
    '⏰ ⚠️ The Feature is still active. Current phase: 📋 Plan.',
    'Back to the plan.',
    '→ Read README.md',
  }, 'the output')
  t.eq(t.task(id).state, 'running', 'the task goes on')
end)

t.test(':Rawko interrupt stops the countdown; the task waits until the user speaks', function()
  local ws = t.workspace()
  t.use(ws, { settings = { countdownTickMillis = 5000 } })
  local id = t.start('feature', ws:script('stops', STOPS_EARLY))
  t.wait('the countdown', function()
    return t.statusline():find('Auto-continuing in 3s', 1, true)
  end)
  t.eq(t.task(id).state, 'countdown', 'the state')
  local countdown = t.task(id).countdown
  t.has(countdown.text, 'Auto-continuing in 3s', "rawko's text")
  t.eq(countdown.label, '⏳ Auto-continuing in 3s', "rawko's label, without the hint")
  vim.cmd('Rawko interrupt')
  t.wait_state(id, 'blocked')
  t.lacks(t.statusline(), '⏳', 'the countdown is gone from the statusline')
  t.has(t.statusline(), 'Feature > 📋 Plan [1/4]', 'the statusline')
  t.ok(t.task(id).reason, 'the status says why the task is blocked')
  t.ok(t.noted(':Rawko message or :Rawko resume goes on'), 'the user is told how to go on')
  t.lacks(table.concat(require('rawko.output').lines(), '\n'), '⏰', 'no reminder was sent')
  vim.cmd('Rawko message Go on with the plan.')
  t.wait_output('→ Read README.md')
  t.eq(t.task(id).state, 'running', 'the task goes on')
  t.lacks(table.concat(require('rawko.output').lines(), '\n'), '⏰', 'still no reminder')
end)

t.test(':Rawko interrupt during a turn blocks the task; a second one is refused', function()
  local ws = t.workspace()
  t.use(ws)
  local id =
    t.start('feature', ws:script('slow', 'turns:\n  - text: "Thinking."\n    delay_ms: 60000\n'))
  t.wait_output('» context:') -- the agent's turn began
  vim.cmd('Rawko interrupt')
  t.wait_state(id, 'blocked')
  -- The task is still the one the statusline follows, so `:Rawko interrupt` names it again.
  vim.cmd('Rawko interrupt ' .. id)
  t.wait('the refusal', function()
    for _, note in ipairs(t.notes) do
      if note.message:match('^rawko: interrupt: ') and note.level == vim.log.levels.ERROR then
        return true
      end
    end
  end)
end)

return t
