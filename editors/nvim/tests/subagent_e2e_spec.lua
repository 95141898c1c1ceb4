--- Subagents end to end: a real `rawko serve` runs a workflow whose orchestrator delegates to two
--- subagents (`delegate_to_subagents`); the writer's Write, which the phase's `subagentTools`
--- blocks, is asked about in the editor, naming the subagent. `:Rawko tasks` lists both
--- subagents indented under the parent's phase with their states as rawko's statuses move them.

local t = require('helpers')

--- Plan, then Work, where the subagents may only read.
local WORKFLOW = {
  ['workflow.yaml'] = 'name: Orchestrate\ncommandName: orchestrate\n'
    .. 'initialMessage: "Task: {description}"\nphases:\n  - plan.md\n  - work.md\n',
  ['plan.md'] = '---\nid: plan\nname: Plan\nemoji: "📋"\n---\nPlan the work.\n',
  ['work.md'] = '---\nid: work\nname: Work\nemoji: "🔨"\n'
    .. 'tools:\n  whitelist: [Read, delegate_to_subagents]\n'
    .. 'subagentTools:\n  whitelist: [Read]\n'
    .. 'availableProfiles: [reviewer, writer]\n---\nDelegate the work.\n',
}

--- The orchestrator fans out to a reviewer (reads, done) and a writer (a blocked Write).
local FAN_OUT = [[
turns:
  - text: "Planned."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Delegating."
    tool_calls:
      - id: fan
        name: delegate_to_subagents
        input:
          tasks:
            - {profile: reviewer, prompt: "Review greet.sh"}
            - {profile: writer, prompt: "Write notes.md", name: scribe}
  - text: "Both done."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
subagents:
  reviewer:
    - tool_calls:
        - {name: Read, input: {path: greet.sh}}
    - text: "greet.sh looks fine."
  writer:
    - tool_calls:
        - {name: Write, input: {path: notes.md, content: "notes\n"}}
    - text: "Wrote notes.md."
]]

--- A workspace with the workflow and the two profiles (pi agent files).
---@return test.Workspace
local function workspace()
  local ws = t.workspace({ starter = false })
  for name, text in pairs(WORKFLOW) do
    ws:write('.rawko/workflows/orchestrate/' .. name, text)
  end
  for _, name in ipairs({ 'reviewer', 'writer' }) do
    ws:write(
      ('.pi/agents/%s.md'):format(name),
      ('---\nname: %s\ndescription: %s\n---\nYou are the %s.\n'):format(name, name, name)
    )
  end
  return ws
end

--- The subagents of `parent` the plugin follows, by profile.
---@param parent string
---@return table<string, rawko.Task>
local function children(parent)
  local kids = {}
  for _, task in pairs(require('rawko.state').tasks) do
    if task.subagent and task.subagent.parentTaskId == parent then
      kids[task.subagent.profile] = task
    end
  end
  return kids
end

--- Opens :Rawko tasks (again) and waits until its lines satisfy `cond`; returns them.
---@param what string
---@param cond fun(lines: string[]): any
---@return string[]
local function tasks_window(what, cond)
  vim.cmd('Rawko tasks')
  local lines
  t.wait(what, function()
    lines = t.float_lines('rawko_tasks')
    return lines and cond(lines)
  end)
  return lines
end

t.test('real subagents: listed under their phase, a blocked Write asked by label', function()
  local ws = workspace()
  t.use(ws)
  local id = t.start('orchestrate', ws:script('fan', FAN_OUT), 'Review and take notes')

  -- The writer's Write is blocked by subagentTools and asked about, naming the subagent.
  local select = t.wait_select('rawko_approval')
  local kids = children(id)
  local reviewer, writer = kids.reviewer, kids.writer
  t.ok(reviewer and writer, 'both subagents are known: ' .. vim.inspect(vim.tbl_keys(kids)))
  local label = ('scribe (subagent of %s)'):format(id)
  t.eq(writer.subagent.label, label, "the writer's label")
  t.eq(writer.subagent.name, 'scribe', "the writer's name")
  t.eq(writer.subagent.phaseIndex, 1, 'the writer works in Work')
  t.eq(reviewer.subagent.label, ('reviewer (subagent of %s)'):format(id), "the reviewer's label")
  t.eq(reviewer.subagent.toolCallId, 'fan', 'the call that started them')
  t.eq({ reviewer.subagent.index, writer.subagent.index }, { 0, 1 }, 'their places in the call')
  t.has(select.opts.prompt, 'rawko: ' .. label .. ': Write is blocked in the Work phase', 'asked')
  local p = assert(require('rawko.prompt').active(), 'the approval window')
  t.eq(p.title, ('rawko: %s: allow Write?'):format(label), 'the title names the subagent')
  local lines
  t.wait('the approval window', function()
    lines = p.win
      and vim.api.nvim_win_is_valid(p.win)
      and vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    return lines
  end)
  t.eq(lines[1], 'Subagent ' .. label, 'the window says whose call it is')
  t.ok(t.find(lines, 'Tool    Write'), 'the tool: ' .. vim.inspect(lines))
  t.ok(t.find(lines, 'Phase   Work'), 'the phase: ' .. vim.inspect(lines))
  t.wait_state(writer.id, 'waiting_approval')
  t.eq(t.statusline(), 'Orchestrate > 🔨 Work [2/2]', 'the statusline follows the parent')

  -- Meanwhile the reviewer finished; both are listed under Work, the writer waiting.
  local row_of = function(task)
    return ('· %s'):format(task.id)
  end
  lines = tasks_window('the subagents under Work', function(l)
    return t.find(l, '↳ reviewer  complete  (subagent) ' .. row_of(reviewer))
      and t.find(l, '↳ scribe  waiting for approval  (writer subagent) ' .. row_of(writer))
  end)
  local at = t.in_order(lines, {
    ('Review and take notes — running · %s'):format(id),
    '  ✓ 📋 Plan',
    '  ▶ 🔨 Work',
    '    ↳ reviewer  complete  (subagent) ' .. row_of(reviewer),
    '    ↳ scribe  waiting for approval  (writer subagent) ' .. row_of(writer),
  }, 'the tasks window')
  t.eq(at, { 1, 2, 3, 4, 5 }, 'the lines, in order: ' .. vim.inspect(lines))
  t.eq(#lines, 5, 'no other line: ' .. vim.inspect(lines))
  vim.cmd('close')

  -- Allowed: the writer writes, and the orchestrator finishes.
  t.choose(select, 'Allow once')
  t.eq(t.wait_finished(id, 15000), 'complete', "the parent's outcome")
  t.eq(vim.fn.readfile(ws:path('notes.md')), { 'notes' }, 'the Write ran')
  t.wait_state(writer.id, 'complete')
  t.wait_state(reviewer.id, 'complete')
  lines = tasks_window('both subagents complete', function(l)
    return t.find(l, '↳ scribe  complete')
  end)
  t.in_order(lines, {
    ('Review and take notes — complete · %s'):format(id),
    '  ✓ 📋 Plan',
    '  ✓ 🔨 Work',
    '    ↳ reviewer  complete  (subagent) ' .. row_of(reviewer),
    '    ↳ scribe  complete  (writer subagent) ' .. row_of(writer),
  }, 'the tasks window at the end')
  t.eq(#lines, 5, 'no other line: ' .. vim.inspect(lines))
  t.eq(t.statusline(), 'Orchestrate — complete', 'the statusline')

  -- What a Neovim that did not follow them would list: rawko's summaries and details say it too.
  local server = assert(t.clients()[1], 'the server')
  local listed = assert(server:request_sync('rawko/listTasks', {}, 5000), 'listTasks').result
  local subs = {}
  for _, summary in ipairs(listed.tasks) do
    if summary.subagent then
      subs[summary.taskId] = summary.subagent
      t.eq(summary.state, 'complete', 'the summary of ' .. summary.taskId)
    end
  end
  t.eq(subs[writer.id], writer.subagent, "the writer's summary")
  t.eq(subs[reviewer.id], reviewer.subagent, "the reviewer's summary")
  local detail = assert(server:request_sync('rawko/getTask', { taskId = writer.id }, 5000)).result
  t.eq(detail.task.subagent, writer.subagent, "the writer's detail")
end)

return t
