--- A whole task: started with :Rawko start, followed phase by phase in the statusline and the
--- output buffer, to its completion.

local t = require('helpers')

--- Completes the feature workflow: two turns per phase, the second calling workflow_step.
local FEATURE = [[
turns:
  - text: "Reading the project first."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "The plan: add a shout flag."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Adding the flag."
    tool_calls:
      - {name: Write, input: {path: shout.txt, content: "HELLO\n"}}
  - text: "Implemented."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Running the tests."
    tool_calls:
      - {name: Bash, input: {command: "cat shout.txt"}}
  - text: "Tests pass."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Checking the syntax."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Looks good."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done: greet.sh can shout."
]]

t.test(
  'a task started with :Rawko start shows each phase in the statusline, then completion',
  function()
    local ws = t.workspace()
    t.use(ws)
    local script = ws:script('feature', FEATURE)
    local id = t.start('feature', script, 'Add a --shout flag to greet.sh')
    t.eq(t.wait_finished(id), 'complete', 'the outcome')
    t.in_order(t.statuslines, {
      'Feature > 📋 Plan [1/4]',
      'Feature > 🛠️ Implement [2/4]',
      'Feature > 🧪 Test [3/4]',
      'Feature > Review [4/4] > 🔍 Static Analysis [1/2]',
      'Feature > Review [4/4] > 👀 Peer Review [2/2]',
      'complete',
    }, 'the statusline through the phases')
    t.has(t.statusline(), 'complete', 'the statusline at the end')
    t.ok(ws:exists('shout.txt'), 'the Write ran')
    t.in_order(require('rawko.output').lines(), {
      '── ' .. id .. ' · Add a --shout flag to greet.sh ──',
      '── Feature > 📋 Plan [1/4]',
      '» context: [Workflow path: Feature ▸ 📋 Plan]',
      'Reading the project first.',
      '→ Read README.md',
      '  ← # greet',
      'The plan: add a shout flag.',
      '→ workflow_step next',
      '── Feature > 🛠️ Implement [2/4]',
      '→ Write shout.txt',
      '→ Bash cat shout.txt',
      '  ← HELLO',
      '── Feature > Review [4/4] > 👀 Peer Review [2/2]',
      '✅ **Feature Complete**',
      '── Feature — complete',
      '■ complete: Done: greet.sh can shout.',
    }, 'the output buffer, in order')
    t.ok(t.noted('task complete: Done: greet.sh can shout.'), 'the completion is told')
    if t.task(id).phases then -- a rawko that gives the phases
      vim.cmd('Rawko tasks')
      t.wait('every phase done', function()
        local lines = t.float_lines('rawko_tasks') or {}
        local text = table.concat(lines)
        return #lines == 7 and not text:find('▶', 1, true) and not text:find('○', 1, true)
      end)
    end
  end
)

t.test(':Rawko tasks shows the phase tree; the marks follow the task; <CR> a prompt', function()
  local ws = t.workspace()
  t.use(ws)
  local id =
    t.start('feature', ws:script('slow', 'turns:\n  - text: "Thinking."\n    delay_ms: 60000\n'))
  if not pcall(t.wait, 'the phases', function()
    return t.task(id).phases
  end, 3000) then
    t.skip('this rawko gives no phases (rawko/getTask)')
  end
  vim.cmd('Rawko tasks')
  local lines, win
  t.wait('the tasks window', function()
    lines, win = t.float_lines('rawko_tasks')
    return lines
  end)
  t.eq(lines, {
    'Add a --shout flag to greet.sh — running · ' .. id,
    '  ▶ 📋 Plan',
    '  ○ 🛠️ Implement',
    '  ○ 🧪 Test',
    '  ○ Review',
    '    ○ 🔍 Static Analysis',
    '    ○ 👀 Peer Review',
  }, 'the task and its phases')
  t.eq(vim.api.nvim_win_get_cursor(win)[1], 2, 'the cursor on the current phase')
  vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
  local text
  t.wait('the prompt', function()
    text = t.float_lines('markdown')
    return text
  end)
  t.ok(
    t.find(text, 'Read the code that the task touches'),
    'the phase prompt: ' .. vim.inspect(text)
  )
  t.ok(t.find(text, 'Next comes Implement.'), 'rendered for the task')
  vim.cmd('close')
  vim.cmd('Rawko next')
  t.wait('the marks to move', function()
    lines = t.float_lines('rawko_tasks')
    return lines and lines[3] == '  ▶ 🛠️ Implement'
  end)
  t.eq(lines[2], '  ✓ 📋 Plan', 'the plan is done')
end)

t.test('a phase with its own agent: the output shows the handoff as a separator', function()
  local ws = t.workspace()
  ws:write(
    '.rawko/workflows/handover/workflow.yaml',
    'name: Handover\ncommandName: handover\ninitialMessage: "Do: {description}"\nphases:\n'
      .. '  - draft.md\n  - review.md\n'
  )
  ws:write(
    '.rawko/workflows/handover/draft.md',
    '---\nid: draft\nname: Draft\nemoji: ✏️\n---\nDraft.\n'
  )
  ws:write(
    '.rawko/workflows/handover/review.md',
    '---\nid: review\nname: Review\nemoji: 🔎\nagent: reviewer\n---\nReview.\n'
  )
  for name, next_agent in pairs({ writer = 'reviewer', reviewer = 'complete' }) do
    ws:write(
      ('.rawko/agents/%s.yaml'):format(name),
      ('name: %s\nsystemPrompt: You %s.\ntransitions:\n  onSuccess: %s\n'):format(
        name,
        name,
        next_agent
      )
    )
  end
  t.use(ws, { task = { provider = 'scripted', agent = 'writer' } })
  local id = t.start(
    'handover',
    ws:script(
      'handover',
      [[
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Drafted."
  - text: "Reviewed."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
]]
    )
  )
  t.eq(t.wait_finished(id), 'complete', 'the outcome')
  if not t.task(id).phases then
    t.skip('this rawko sends no handoff')
  end
  local lines = require('rawko.output').lines()
  local at = t.in_order(
    lines,
    { 'Drafted.', '── handoff: writer → reviewer ──', 'Reviewed.' },
    'the output'
  )
  t.ok(t.find(lines, 'handoff') == at[2], 'one handoff: ' .. table.concat(lines, '\n'))
end)

t.test('with vim.lsp.enable, opening a file starts rawko, and :Rawko uses that server', function()
  local ws = t.workspace()
  t.use(ws)
  vim.lsp.enable('rawko')
  vim.cmd.edit(vim.fn.fnameescape(ws:path('greet.sh')))
  t.wait('rawko to attach to the buffer', function()
    return #vim.lsp.get_clients({ name = 'rawko', bufnr = 0 }) == 1
  end)
  local attached = vim.lsp.get_clients({ name = 'rawko', bufnr = 0 })[1]
  t.eq(attached.root_dir, ws.dir, 'the workspace is the root')
  local id = t.start('feature', ws:script('feature', FEATURE))
  t.eq(t.wait_finished(id), 'complete', 'the outcome')
  t.eq(#t.clients(), 1, 'one server')
  t.eq(t.task(id).client_id, attached.id, 'the task runs on that server')
  vim.lsp.enable('rawko', false)
end)

return t
