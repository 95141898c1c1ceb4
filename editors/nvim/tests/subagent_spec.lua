--- Subagents (tasks another task's `delegate_to_subagents` call started, which rawko marks with
--- `subagent`), fed to the handlers directly as rawko would send them (no server): `:Rawko tasks`
--- lists them indented under their parent's phase or line, and its keys act on the subagent's
--- id; the statusline keeps following the top-level task; an approval prompt names the subagent.

local t = require('helpers')

local handlers = function()
  return require('rawko.handlers')
end
-- No client: the tasks belong to no server.
local ctx = { method = 'test' }

--- The starter `feature` workflow's first phases, as rawko/getTask gives them.
local PHASES = {
  { kind = 'phase', index = 0, name = 'Plan', emoji = '📋', depth = 0, status = 'done' },
  {
    kind = 'phase',
    index = 1,
    name = 'Implement',
    emoji = '🛠️',
    depth = 0,
    status = 'current',
  },
  { kind = 'scope', name = 'Review', depth = 0, status = 'todo' },
  { kind = 'phase', index = 2, name = 'Check', emoji = '🔎', depth = 1, status = 'todo' },
}

local WORDS = { running = '', waiting_approval = ' — waiting for approval' }
local CLASSES = { running = 'busy', waiting_approval = 'waiting', complete = 'finished' }

--- rawko's `SubagentInfo` of a subagent of `parent`'s call-7.
---@param parent string
---@param index integer
---@param extra? table
local function info(parent, index, extra)
  return vim.tbl_extend('force', {
    parentTaskId = parent,
    toolCallId = 'call-7',
    index = index,
    profile = 'reviewer',
    name = 'reviewer',
    label = ('reviewer (subagent of %s)'):format(parent),
  }, extra or {})
end

local seqs = {}

--- A `rawko/status` of task `id` as rawko sends it.
---@param id string
---@param state string
---@param extra? table
local function status(id, state, extra)
  seqs[id] = (seqs[id] or 0) + 1
  local where = (extra or {}).breadcrumbText or 'Feature > 🛠️ Implement [2/4]'
  handlers().status(
    nil,
    vim.tbl_extend('force', {
      taskId = id,
      seq = seqs[id],
      state = state,
      stateClass = CLASSES[state] or 'busy',
      actions = state == 'complete' and {} or { 'interrupt', 'cancel' },
      breadcrumb = {},
      text = where .. (WORDS[state] or ''),
      breadcrumbText = where,
      breadcrumbLevels = vim.split(where, ' > ', { plain = true }),
      stateText = WORDS[state] or '',
    }, extra or {}),
    ctx
  )
end

--- A subagent's status: it runs no workflow of its own.
local function sub_status(id, state, subagent)
  status(id, state, { breadcrumbText = 'Review the change', subagent = subagent })
end

--- The summary rawko/listTasks gives of task `id`.
local function summary(id, state, description, subagent)
  return {
    taskId = id,
    description = description,
    state = state,
    stateClass = CLASSES[state] or 'busy',
    stateText = WORDS[state] or '',
    breadcrumbText = '',
    breadcrumbLevels = {},
    actions = {},
    external = false,
    startedAt = 1,
    subagent = subagent,
  }
end

--- Stands in for rawko: rawko/listTasks answers `tasks`; every request is recorded.
---@param tasks table[]
---@return table[] requests
local function fake_rawko(tasks)
  local requests = {}
  local fake = { id = 4242 }
  function fake.request(_, method, params, on_result)
    table.insert(requests, { method = method, params = params })
    on_result(nil, method == 'rawko/listTasks' and { tasks = tasks } or vim.empty_dict())
    return true, #requests
  end
  local client = require('rawko.client')
  local saved = client.request
  client.request = function(method, params, on_result)
    table.insert(requests, { method = method, params = params })
    if on_result then
      on_result(method == 'rawko/listTasks' and { tasks = tasks } or vim.empty_dict(), fake)
    end
  end
  requests.restore = function()
    client.request = saved
  end
  return requests
end

--- Opens :Rawko tasks; returns its lines and window.
---@return string[], integer
local function tasks_window()
  vim.cmd('Rawko tasks')
  local lines, win
  t.wait('the tasks window', function()
    lines, win = t.float_lines('rawko_tasks')
    return lines
  end)
  return lines, win
end

--- Presses `key` on the line of the window `win` that contains `needle`.
local function press_on(win, lines, needle, key)
  local at = t.find(lines, needle)
  t.ok(at, ('a line with %q: %s'):format(needle, vim.inspect(lines)))
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { at, 0 })
  vim.api.nvim_feedkeys(key, 'x', false)
end

--- The requests of `method` sent so far, by task id.
local function sent(requests, method)
  local ids = {}
  for _, r in ipairs(requests) do
    if r.method == method then
      table.insert(ids, r.params.taskId)
    end
  end
  return ids
end

--- The parent task, in Implement, with its phases as rawko/getTask gave them.
local function parent()
  status('task-1', 'running', { workflow = 'feature', phaseIndex = 1, phasesDone = 1 })
  local task = require('rawko.state').tasks['task-1']
  task.description = 'Add a --shout flag'
  task.phases = PHASES
  -- As after rawko/getTask's answer.
  require('rawko').redraw()
end

t.test(
  ':Rawko tasks lists subagents under their phase or their parent, keys act on their ids',
  function()
    parent()
    sub_status('task-2', 'running', info('task-1', 0, { phaseIndex = 1 }))
    sub_status('task-3', 'waiting_approval', info('task-1', 1, { name = 'security' }))
    sub_status('task-6', 'running', info('task-1', 2, { name = 'checker', phaseIndex = 2 }))
    local requests = fake_rawko({
      summary('task-1', 'running', 'Add a --shout flag'),
      summary('task-2', 'running', 'Review the diff', info('task-1', 0, { phaseIndex = 1 })),
      -- A subagent whose parent is not listed: at the top, by its label; its own subagent under it.
      summary('task-4', 'running', 'Review it', info('task-9', 0)),
      summary(
        'task-5',
        'running',
        'Help',
        info('task-4', 0, { name = 'helper', profile = 'helper' })
      ),
    })
    local ok, err = pcall(function()
      local lines, win = tasks_window()
      t.eq(lines, {
        'Add a --shout flag — running · task-1',
        '  ↳ security  waiting for approval  (reviewer subagent) · task-3',
        '  ✓ 📋 Plan',
        '  ▶ 🛠️ Implement',
        '    ↳ reviewer  running  (subagent) · task-2',
        '  ○ Review',
        '    ○ 🔎 Check',
        '      ↳ checker  running  (reviewer subagent) · task-6',
        'reviewer (subagent of task-9): Review it — running · task-4',
        '  ↳ helper  running  (subagent) · task-5',
      }, 'the subagents under their parent')

      press_on(win, lines, '· task-2', 'c')
      press_on(win, lines, '· task-3', 'r')
      press_on(win, lines, '· task-5', 'c')
      press_on(win, lines, '· task-1', 'c')
      t.eq(
        sent(requests, 'rawko/cancelTask'),
        { 'task-2', 'task-5', 'task-1' },
        'c cancels the task of its line'
      )
      t.eq(sent(requests, 'rawko/resumeTask'), { 'task-3' }, 'r resumes the subagent of its line')
      -- Phase keys do nothing on a subagent's line.
      press_on(win, lines, '· task-2', 'd')
      t.eq(sent(requests, 'rawko/phaseDiff'), {}, 'd on a subagent line')

      -- The window follows the statuses: the subagent finishes.
      sub_status('task-2', 'complete', info('task-1', 0, { phaseIndex = 1 }))
      lines = t.float_lines('rawko_tasks')
      t.ok(t.find(lines, '    ↳ reviewer  complete  (subagent) · task-2'), vim.inspect(lines))
    end)
    requests.restore()
    assert(ok, err)
  end
)

t.test('a subagent is listed at the top until its parent shows up, then under it', function()
  sub_status('task-2', 'running', info('task-1', 0, { phaseIndex = 0 }))
  local requests = fake_rawko({})
  local ok, err = pcall(function()
    local lines = tasks_window()
    t.eq(lines, { 'reviewer (subagent of task-1) — running · task-2' }, 'alone at the top')
    parent()
    lines = t.float_lines('rawko_tasks')
    t.eq(lines, {
      'Add a --shout flag — running · task-1',
      '  ✓ 📋 Plan',
      '    ↳ reviewer  running  (subagent) · task-2',
      '  ▶ 🛠️ Implement',
      '  ○ Review',
      '    ○ 🔎 Check',
    }, 'under the phase it works in once the parent is known')
    -- Parents that name each other are never lost.
    sub_status('x-1', 'running', info('x-2', 0))
    sub_status('x-2', 'running', info('x-1', 0))
    lines = t.float_lines('rawko_tasks')
    t.ok(t.find(lines, 'reviewer (subagent of x-2) — running · x-1'), vim.inspect(lines))
    t.ok(t.find(lines, 'reviewer (subagent of x-1) — running · x-2'), vim.inspect(lines))
  end)
  requests.restore()
  assert(ok, err)
end)

t.test("the statusline ignores subagents' statuses and counts no subagent", function()
  parent()
  t.eq(t.statusline(), 'Feature > 🛠️ Implement [2/4]', 'the parent')
  sub_status('task-2', 'running', info('task-1', 0, { phaseIndex = 1 }))
  sub_status('task-2', 'waiting_approval', info('task-1', 0, { phaseIndex = 1 }))
  t.eq(t.statusline(), 'Feature > 🛠️ Implement [2/4]', 'still the parent, with no (+1)')
  -- Following a subagent (resumed from :Rawko tasks): its parent stands for it.
  require('rawko.state').focus('task-2')
  t.eq(t.statusline(), 'Feature > 🛠️ Implement [2/4]', 'a focused subagent')
  t.eq(require('rawko').current().id, 'task-1', 'the current task')
  -- The parent ends while its subagent still runs: the subagent does not take its place.
  status('task-1', 'complete', { breadcrumbText = 'Feature', stateText = ' — complete' })
  sub_status('task-2', 'running', info('task-1', 0, { phaseIndex = 1 }))
  t.eq(t.statusline(), 'Feature — complete', 'the finished parent')
  -- A top-level task still counts as another; the focused subagent's parent comes back first.
  status('task-8', 'running', { breadcrumbText = 'Docs' })
  t.eq(t.statusline(), 'Docs', 'an active top-level task')
  status('task-1', 'running')
  t.eq(t.statusline(), 'Feature > 🛠️ Implement [2/4] (+1)', 'another top-level task counts')
  -- A subagent alone (its parent unknown) is not shown either.
  require('rawko.state')._reset()
  sub_status('task-3', 'running', info('task-9', 0))
  t.eq(t.statusline(), '', 'no top-level task')
end)

t.test('an approval of a subagent names it in the title, the window and the question', function()
  sub_status('task-2', 'waiting_approval', info('task-1', 0))
  local params = {
    taskId = 'task-2',
    toolCallId = 'call-9',
    tool = 'Write',
    input = { path = 'notes.md', content = 'x' },
    phase = 'Plan',
    reason = 'Refer to the current phase.',
    detail = 'reviewer (subagent of task-1): Write is blocked in the Plan phase (allowed: Read)',
    options = { 'allow_once', 'reject_once' },
    summary = 'Write notes.md (1 bytes)',
    subagent = info('task-1', 0),
  }
  local result
  coroutine.wrap(function()
    result = handlers().approve_tool_call(nil, params, ctx)
  end)()
  local select = t.wait_select('rawko_approval')
  local p = assert(require('rawko.prompt').active())
  t.eq(p.title, 'rawko: reviewer (subagent of task-1): allow Write?', 'the title')
  t.eq(
    select.opts.prompt,
    'rawko: reviewer (subagent of task-1): Write is blocked in the Plan phase (allowed: Read) — allow it?',
    'the question: the label once'
  )
  local lines
  t.wait('the approval window', function()
    lines = p.win
      and vim.api.nvim_win_is_valid(p.win)
      and vim.api.nvim_buf_get_lines(p.buf, 0, -1, false)
    return lines
  end)
  t.eq(lines[1], 'Subagent reviewer (subagent of task-1)', 'the window says whose call it is')
  t.ok(t.find(lines, 'Reason  reviewer (subagent of task-1): Write is blocked'), vim.inspect(lines))
  t.choose(select, 'Deny')
  t.wait('the answer', function()
    return result ~= nil
  end)
  t.eq(result, { outcome = 'reject_once' }, 'the answer')

  -- rawko's detail without the label: it is put first; a task that is no subagent has none.
  local bare = vim.tbl_extend('force', params, { detail = 'Write is blocked' })
  t.eq(handlers().approval_reason(bare), 'reviewer (subagent of task-1): Write is blocked', 'added')
  bare.subagent = nil
  t.eq(handlers().approval_reason(bare), 'Write is blocked', 'no subagent, no label')
end)

--- A `rawko/output` of kind `subagent` of task `id`: the external agent's own subagent
--- `agent_id` of type `agent` started or stopped.
local function ext_sub(id, agent, agent_id, verb)
  seqs[id] = (seqs[id] or 0) + 1
  handlers().output(nil, {
    taskId = id,
    seq = seqs[id],
    kind = 'subagent',
    text = ('subagent %s %s (%s)'):format(agent, verb, agent_id),
    agent = agent,
    agentId = agent_id,
  }, ctx)
end

--- An external agent's session without a workflow.
local function session(id, state, extra)
  status(
    id,
    state,
    vim.tbl_extend('force', {
      breadcrumbText = 'Claude Code session',
      external = true,
      externalAgentName = 'Claude Code',
      stateText = WORDS[state] or (state == 'complete' and ' — complete' or ''),
    }, extra or {})
  )
  require('rawko.state').tasks[id].description = 'Explain the build'
end

t.test(
  ":Rawko tasks lists an external agent's own subagents under its session; no key acts on them",
  function()
    session('ext-1', 'running')
    ext_sub('ext-1', 'Explore', 'agent-123', 'started')
    ext_sub('ext-1', 'Plan', 'agent-456', 'started')
    -- rawko's own subagent of the session comes first, as under any task.
    sub_status('task-2', 'running', info('ext-1', 0))
    local requests = fake_rawko({})
    local ok, err = pcall(function()
      local lines, win = tasks_window()
      t.eq(lines, {
        'Claude Code: Explain the build — running · ext-1',
        '  ↳ reviewer  running  (subagent) · task-2',
        '  ↳ Explore  running  (Claude Code subagent)',
        '  ↳ Plan  running  (Claude Code subagent)',
      }, 'under the session, in the order they started')

      -- They are no rawko tasks: r and c do nothing on their lines.
      press_on(win, lines, '↳ Explore', 'c')
      press_on(win, lines, '↳ Plan', 'r')
      press_on(win, lines, '↳ Explore', 'd')
      t.eq(sent(requests, 'rawko/cancelTask'), {}, 'c on an external subagent')
      t.eq(sent(requests, 'rawko/resumeTask'), {}, 'r on an external subagent')
      t.eq(sent(requests, 'rawko/phaseDiff'), {}, 'd on an external subagent')

      -- The window follows the output: Explore stops; the session ends with Plan still running.
      ext_sub('ext-1', 'Explore', 'agent-123', 'stopped')
      lines = t.float_lines('rawko_tasks')
      t.ok(t.find(lines, '  ↳ Explore  complete  (Claude Code subagent)'), vim.inspect(lines))
      t.ok(t.find(lines, '  ↳ Plan  running  (Claude Code subagent)'), vim.inspect(lines))
      session('ext-1', 'complete')
      lines = t.float_lines('rawko_tasks')
      t.eq(lines, {
        'Claude Code: Explain the build — complete · ext-1',
        '  ↳ reviewer  running  (subagent) · task-2',
        '  ↳ Explore  complete  (Claude Code subagent)',
        '  ↳ Plan  complete  (Claude Code subagent)',
      }, 'a session that ended marks its running subagents stopped')
    end)
    requests.restore()
    assert(ok, err)
  end
)

t.test("an external agent's subagents: kept by agentId, the output lines stay", function()
  local state = require('rawko.state')
  session('ext-1', 'running', { externalAgentName = vim.NIL })
  -- A stop first heard of; then the same id starts again.
  ext_sub('ext-1', 'Explore', 'agent-9', 'stopped')
  local subs = state.tasks['ext-1'].external_subagents
  t.eq(#subs, 1, 'one')
  t.eq({ subs[1].agent_id, subs[1].agent, subs[1].state }, { 'agent-9', 'Explore', 'complete' })
  ext_sub('ext-1', 'Explore', 'agent-9', 'started')
  t.eq(#subs, 1, 'one per agentId')
  t.eq(subs[1].state, 'running', 'started again')
  -- Output of another kind, or naming no subagent, changes nothing.
  seqs['ext-1'] = seqs['ext-1'] + 1
  handlers().output(nil, {
    taskId = 'ext-1',
    seq = seqs['ext-1'],
    kind = 'text',
    text = 'subagent Explore stopped (agent-9)',
  }, ctx)
  ext_sub('ext-1', '', '', 'stopped')
  t.eq(#subs, 1, 'no subagent named')
  t.eq(subs[1].state, 'running', 'still running')
  t.eq(state.subagent_stopped('subagent Stopped started (a-1)'), false, 'the last words tell')
  t.eq(state.subagent_stopped('subagent my started one stopped (a-1)'), true)
  -- The output lines stay.
  t.ok(t.find(require('rawko.output').lines(), 'subagent Explore started (agent-9)'), 'output')
  -- A finished task marks them stopped (rawko/taskFinished).
  handlers().task_finished(
    nil,
    { taskId = 'ext-1', seq = seqs['ext-1'] + 1, outcome = 'complete', summary = 'done' },
    ctx
  )
  t.eq(subs[1].state, 'complete', 'the session ended')
  -- No agent named by the session: `external subagent`.
  local requests = fake_rawko({})
  local ok, err = pcall(function()
    local lines = tasks_window()
    t.ok(t.find(lines, '  ↳ Explore  complete  (external subagent)'), vim.inspect(lines))
  end)
  requests.restore()
  assert(ok, err)
end)
