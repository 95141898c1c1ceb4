--- The :Rawko subcommands: start (asking for the description and the workflow), next, loop,
--- status, cancel, validate, output; errors and completion.

local t = require('helpers')

local SLOW = 'turns:\n  - text: "Thinking."\n    delay_ms: 60000\n'

t.test(':Rawko start asks for the description, then the workflow with vim.ui.select', function()
  local ws = t.workspace()
  -- A second workflow users may start, beside feature (review only runs as a subworkflow).
  ws:write(
    '.rawko/workflows/docs/workflow.yaml',
    'name: Docs\ncommandName: docs\ninitialMessage: "Document: {description}"\nphases:\n  - write.md\n'
  )
  ws:write(
    '.rawko/workflows/docs/write.md',
    '---\nid: write\nname: Write\nemoji: ✍️\n---\nWrite the docs.\n'
  )
  t.use(ws, { task = { provider = 'scripted', script = ws:script('slow', SLOW) } })
  table.insert(t.inputs, 'Document the --shout flag')
  vim.cmd('Rawko start')
  local select = t.wait_select('rawko_workflow')
  t.eq(t.input_prompts, { 'rawko: describe the task: ' }, 'the description was asked first')
  t.eq(#select.labels, 2, 'two workflows offered: ' .. vim.inspect(select.labels))
  local labels = table.concat(select.labels, '|')
  -- What the breadcrumb counts ([1/4]), and the phases of the subworkflow too: an older rawko
  -- (without outerPhaseCount) gives only the latter.
  local new = select.items[1].outerPhaseCount ~= nil
  t.has(
    labels,
    new and 'feature — Feature (4 phases, 5 steps)' or 'feature — Feature (5 phases)'
  )
  t.has(labels, 'docs — Docs (1 phase)')
  t.lacks(
    table.concat(select.labels, '|'),
    'review —',
    'a subworkflow-only workflow is not offered'
  )
  t.choose(select, 'docs')
  t.wait('the statusline to show the docs workflow', function()
    return t.statusline():find('Docs > ✍️ Write [1/1]', 1, true)
  end)
  local task = require('rawko').current()
  t.eq(task.description, 'Document the --shout flag', 'the task carries the description')
  t.eq(task.workflow, 'docs', 'the chosen workflow')
  t.ok(#vim.fn.win_findbuf(require('rawko.output').buffer()) == 1, 'the output window opened')
end)

t.test(':Rawko start WORKFLOW DESCRIPTION asks nothing', function()
  local ws = t.workspace()
  t.use(ws, { task = { provider = 'scripted', script = ws:script('slow', SLOW) } })
  vim.cmd('Rawko start feature Add a --shout flag')
  t.wait('the statusline to show the plan phase', function()
    return t.statusline():find('Feature > 📋 Plan [1/4]', 1, true)
  end)
  t.eq(#t.input_prompts, 0, 'no description asked')
  t.eq(#t.selects, 0, 'no workflow asked')
  t.eq(require('rawko').current().description, 'Add a --shout flag', 'the description')
end)

t.test(':Rawko start with the description dismissed starts nothing', function()
  local ws = t.workspace()
  t.use(ws, { task = { provider = 'scripted', script = ws:script('slow', SLOW) } })
  table.insert(t.inputs, false)
  vim.cmd('Rawko start feature')
  t.wait('the description prompt', function()
    return #t.input_prompts == 1
  end)
  t.wait('the plugin to say nothing happened', function()
    return t.noted('nothing given; nothing done')
  end)
  t.eq(require('rawko').current(), nil, 'no task')
  t.eq(t.statusline(), '', 'the statusline is empty')
end)

t.test(':Rawko next, loop and status move the task through its workflow by hand', function()
  local ws = t.workspace()
  t.use(ws)
  t.start('feature', ws:script('slow', SLOW))
  t.wait('the plan phase', function()
    return t.statusline() == 'Feature > 📋 Plan [1/4]'
  end)
  vim.cmd('Rawko next')
  t.wait('the implement phase', function()
    return t.statusline() == 'Feature > 🛠️ Implement [2/4]'
  end)
  t.wait_output('✓ Advanced: Plan → 🛠️ Implement')
  vim.cmd('Rawko loop')
  t.wait('back at the plan phase', function()
    return t.statusline() == 'Feature > 📋 Plan [1/4]'
  end)
  vim.cmd('Rawko status')
  t.wait('the status to be told', function()
    return t.noted('Plan')
  end)
end)

t.test(':Rawko cancel ends the task, and the statusline says so', function()
  local ws = t.workspace()
  t.use(ws)
  local id = t.start('feature', ws:script('slow', SLOW))
  t.wait_output('» context:') -- the agent's turn began
  vim.cmd('Rawko cancel')
  t.wait('the task to finish', function()
    return t.task(id).outcome ~= nil
  end)
  t.eq(t.task(id).outcome, 'cancelled', 'the outcome')
  t.eq(t.task(id).state, 'cancelled', 'the state')
  t.eq(t.statusline(), 'Feature — cancelled', 'the statusline')
  t.ok(
    t.find(require('rawko.output').lines(), '■ cancelled: cancelled'),
    'the output ends the task'
  )
end)

t.test("a refused request shows rawko's error message", function()
  local ws = t.workspace()
  t.use(ws)
  local id = t.start('feature', ws:script('slow', SLOW))
  t.wait_output('» context:') -- the agent's turn began
  vim.cmd('Rawko next')
  vim.cmd('Rawko next')
  vim.cmd('Rawko next')
  t.wait('the review subworkflow', function()
    return t.statusline():find('Static Analysis', 1, true)
  end)
  vim.cmd('Rawko loop')
  t.wait('the refusal to be shown', function()
    for _, note in ipairs(t.notes) do
      if note.message:match('^rawko: step: ') and note.level == vim.log.levels.ERROR then
        return true
      end
    end
  end)
end)

t.test(':Rawko validate puts each workflow problem into the quickfix list', function()
  local ws = t.workspace()
  ws:write(
    '.rawko/workflows/broken/workflow.yaml',
    'name: Broken\ninitialMessage: "x"\ncommandName: "not ok!"\nphases:\n  - plan.md\n'
  )
  ws:write('.rawko/workflows/broken/plan.md', '---\nid: plan\nname: Plan\n---\nPlan.\n')
  t.use(ws)
  vim.cmd('Rawko validate')
  t.wait('the quickfix list', function()
    return #vim.fn.getqflist() > 0
  end)
  local entries = {}
  for _, item in ipairs(vim.fn.getqflist()) do
    table.insert(
      entries,
      ('%s:%d: %s: %s'):format(
        vim.fn.fnamemodify(vim.fn.bufname(item.bufnr), ':p'),
        item.lnum,
        item.type,
        item.text
      )
    )
  end
  table.sort(entries)
  t.eq(entries, {
    ws:path('.rawko/workflows/broken/plan.md')
      .. ':2: E: [broken] phase emoji is required in the frontmatter',
    ws:path('.rawko/workflows/broken/workflow.yaml')
      .. ':3: E: [broken] commandName "not ok!" may only contain letters, digits, `_` and `-`',
  }, 'the problems, each at its file and line')
  t.eq(vim.fn.getqflist({ title = 1 }).title, 'rawko: workflows', 'the list is titled')
  t.ok(t.noted('2 problems in the workflows'), 'the count is told')
end)

t.test(':Rawko validate with valid workflows empties the quickfix list', function()
  local ws = t.workspace()
  t.use(ws)
  vim.fn.setqflist({ { filename = 'old', lnum = 1, text = 'stale' } })
  vim.cmd('Rawko validate')
  t.wait('the verdict', function()
    return t.noted('every workflow is valid')
  end)
  t.eq(#vim.fn.getqflist(), 0, 'no stale problem left')
end)

t.test(':Rawko without a task to act on says how to start one', function()
  local ws = t.workspace()
  t.use(ws)
  for _, sub in ipairs({ 'cancel', 'next', 'loop', 'interrupt', 'message hi' }) do
    t.notes = {}
    vim.cmd('Rawko ' .. sub)
    t.ok(t.noted('no task is running; :Rawko start starts one'), sub .. ' explains')
  end
  vim.cmd('Rawko frobnicate')
  t.ok(t.noted('unknown subcommand "frobnicate"'), 'an unknown subcommand is named')
  t.eq(#t.clients(), 0, 'no server was started for nothing')
end)

t.test(':Rawko completes subcommands, workflows and task ids', function()
  local ws = t.workspace()
  t.use(ws)
  t.eq(
    vim.fn.getcompletion('Rawko ', 'cmdline'),
    require('rawko.commands').names,
    'all subcommands'
  )
  t.eq(vim.fn.getcompletion('Rawko in', 'cmdline'), { 'interrupt' }, 'by prefix')
  local id = t.start('feature', ws:script('slow', SLOW))
  t.eq(vim.fn.getcompletion('Rawko start ', 'cmdline'), { 'feature' }, 'workflows users may start')
  t.eq(vim.fn.getcompletion('Rawko cancel ', 'cmdline'), { id }, 'the running task')
end)

t.test(':Rawko output opens and closes the output window', function()
  local ws = t.workspace()
  t.use(ws, { output = { open_on_start = false } })
  local id = t.start('feature', ws:script('slow', SLOW))
  t.wait_output('» context:') -- the agent's turn began
  local output = require('rawko.output')
  t.eq(#vim.fn.win_findbuf(output.buffer()), 0, 'not opened on start when so configured')
  vim.cmd('Rawko output')
  t.eq(#vim.fn.win_findbuf(output.buffer()), 1, 'opened')
  t.eq(vim.api.nvim_buf_get_name(output.buffer()), 'rawko://output', 'the buffer name')
  t.eq(vim.bo[output.buffer()].buftype, 'nofile', 'a scratch buffer')
  vim.cmd('Rawko output')
  t.eq(#vim.fn.win_findbuf(output.buffer()), 0, 'closed')
end)

t.test(':Rawko start without the rawko binary says what to do', function()
  local ws = t.workspace()
  t.use(ws)
  vim.g.rawko = vim.tbl_extend('force', vim.g.rawko, { bin = ws:path('no-such-rawko') })
  vim.cmd('Rawko start feature Add a flag')
  t.wait('the error', function()
    return #t.notes > 0
  end)
  t.eq(t.notes[1].level, vim.log.levels.ERROR, 'an error')
  t.eq(
    t.notes[1].message,
    ('rawko: startTask: %s is not an executable: install rawko or set vim.g.rawko.bin (see :checkhealth rawko)'):format(
      ws:path('no-such-rawko')
    ),
    'the message'
  )
  t.eq(#t.clients(), 0, 'no server')
end)

return t
