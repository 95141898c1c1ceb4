--- `:Rawko tasks`: rawko's tasks in a floating window, each with its workflow's phases as a tree
--- (✓ done, ▶ current, ○ to do; nested workflows indented). The marks move with the tasks'
--- statuses (their `phaseIndex`), never by asking again. <CR> on a phase opens the context prompt
--- rawko injects in that phase (`rawko/phasePrompt`) in a read-only Markdown buffer; `d` on a
--- phase opens what the phase changed (`rawko/phaseDiff`) in a read-only `diff` buffer; `R` on a
--- phase rewinds the task and the workspace to the start of that phase (`rawko/rewindTask`),
--- asking first with what its dry run says would change, and again before overwriting files the
--- user changed; `r` resumes the task under the cursor, `c` cancels it; `q` closes.
---
--- A subagent (a task with `subagent`: another task's `delegate_to_subagents` call started it) is
--- listed indented under its parent: after the phase it works in (`subagent.phaseIndex`) when the
--- parent's phases show it, else after the parent's line (`  ↳ reviewer  running  (subagent) ·
--- task-2`). Its line acts on the subagent's own task id. A subagent whose parent is not listed
--- stands at the top with its label until the parent shows up.
---
--- An external agent's own subagents (Claude Code's Task tool: output of kind `subagent` of its
--- session, kept in `external_subagents`) are listed the same way after the session's line, after
--- rawko's: `  ↳ Explore  running  (Claude Code subagent)`. They are no rawko tasks: no key acts
--- on their lines.

local M = {}

local client = require('rawko.client')
require('rawko.output') -- defines the highlight groups
local prompt = require('rawko.prompt')
local state = require('rawko.state')

local ns = vim.api.nvim_create_namespace('rawko_tasks')

local marks = { done = '✓', current = '▶', todo = '○' }
local groups = { done = 'RawkoPhaseDone', current = 'RawkoPhaseCurrent', todo = 'RawkoPhaseTodo' }

--- The open window: its buffer, the tasks rawko listed, the details fetched of those this
--- Neovim does not follow, the client that listed them, and what each line shows.
---@type {buf: integer, win: integer, listed: table[], details: table<string, table>, client: vim.lsp.Client, rows: table[]}?
local view = nil

--- The status of each of `phases` (a task's `PhaseNode`s) as `task` stands now: from its last
--- status's `phasesDone` and `phaseIndex`, else as rawko/getTask gave them.
---@param phases table[]
---@param task {phase_index?: number, phases_done?: number}
---@return string[]
local function statuses_of(phases, task)
  local at, done = task.phase_index, task.phases_done
  local statuses = {}
  for i, node in ipairs(phases) do
    -- The concrete phases a node stands for: itself, or those of its nested workflow.
    local first, last = node.index, node.index
    for j = i + 1, node.kind == 'scope' and #phases or 0 do
      if phases[j].depth <= node.depth then
        break
      end
      first, last = first or phases[j].index, phases[j].index or last
    end
    if not (done and first) then
      statuses[i] = node.status or 'todo'
    elseif last < done then
      statuses[i] = 'done'
    else
      statuses[i] = at and at >= first and at <= last and 'current' or 'todo'
    end
  end
  return statuses
end

--- rawko's words for a task's state (` — waiting for approval` without its dash), else the
--- state's name.
---@param known table a task, or a summary or detail rawko gave
---@return string
local function state_words(known)
  local words = (known.state_text or known.stateText or ''):gsub('^ — ', '')
  return words ~= '' and words or tostring(known.state or '')
end

--- The subagents in the window: `parent_of(id)` names the task a subagent shows under (its parent
--- when the window lists that one, and no loop of parents leads back to it), `children[id]` the
--- subagents under task `id` in their call's order.
---@param summaries table<string, table> the summaries rawko listed, by id
---@return fun(id: string): string?, table<string, string[]>, fun(id: string): rawko.Subagent?
local function subagents(summaries)
  local function sub_of(id)
    return state.subagent_of(state.tasks[id])
      or state.subagent_of(summaries[id])
      or state.subagent_of(view.details[id])
  end
  local function listed(id)
    return state.tasks[id] ~= nil or summaries[id] ~= nil
  end
  local function parent_of(id)
    local sub = sub_of(id)
    if not (sub and listed(sub.parentTaskId)) then
      return nil
    end
    -- Up to a task that is not shown under another; a loop back to `id` puts it at the top.
    local seen, at = { [id] = true }, sub.parentTaskId
    while true do
      if seen[at] then
        return nil
      end
      seen[at] = true
      local up = sub_of(at)
      if not (up and listed(up.parentTaskId)) then
        return sub.parentTaskId
      end
      at = up.parentTaskId
    end
  end
  local children = {}
  local ids = vim.tbl_keys(summaries)
  for id in pairs(state.tasks) do
    if not summaries[id] then
      table.insert(ids, id)
    end
  end
  for _, id in ipairs(ids) do
    local parent = parent_of(id)
    if parent then
      children[parent] = children[parent] or {}
      table.insert(children[parent], id)
    end
  end
  for _, list in pairs(children) do
    table.sort(list, function(a, b)
      local sa, sb = sub_of(a), sub_of(b)
      local ca, cb = tostring(sa.toolCallId or ''), tostring(sb.toolCallId or '')
      if ca ~= cb then
        return ca < cb
      end
      local ia, ib = tonumber(sa.index) or 0, tonumber(sb.index) or 0
      if ia ~= ib then
        return ia < ib
      end
      return a < b
    end)
  end
  return parent_of, children, sub_of
end

--- The window's lines, highlights and rows (what each line stands for).
---@return string[], table[], table[]
local function render()
  local lines, highlights, rows = {}, {}, {}
  local summaries = {}
  for _, summary in ipairs(view.listed) do
    summaries[summary.taskId] = summary
  end
  local parent_of, children, sub_of = subagents(summaries)
  --- The line of subagent `id`, `depth` levels in, then those of its own subagents.
  local function add_subagent(id, depth)
    local known = state.tasks[id] or summaries[id] or view.details[id] or {}
    local sub = sub_of(id) or {}
    local name = sub.name or sub.profile or id
    -- `(subagent)`, or `(reviewer subagent)` when the call named it otherwise than its profile.
    local profile = sub.profile and sub.profile ~= name and sub.profile .. ' ' or ''
    local line = ('%s↳ %s  %s  (%ssubagent) · %s'):format(
      string.rep('  ', depth),
      name,
      state_words(known),
      profile,
      id
    )
    table.insert(lines, line)
    table.insert(highlights, { #lines - 1, 'RawkoSubagent' })
    table.insert(rows, { task = id, subagent = true })
    for _, child in ipairs(children[id] or {}) do
      add_subagent(child, depth + 1)
    end
  end
  local function add(task_id, summary)
    local live, detail = state.tasks[task_id], view.details[task_id] or {}
    local known = live or summary or detail
    local what = known.description or (summary or {}).description or ''
    -- An external agent's session names its agent: `Claude Code: Explain the build`.
    local agent = known.external_agent_name or known.externalAgentName
    if type(agent) == 'string' and agent ~= '' then
      what = agent .. ': ' .. what
    end
    -- A subagent whose parent is not listed (yet) says whose it is.
    local sub = sub_of(task_id)
    if sub and type(sub.label) == 'string' then
      what = sub.label .. (what ~= '' and ': ' .. what or '')
    end
    table.insert(lines, ('%s — %s · %s'):format(what, state_words(known), task_id))
    table.insert(highlights, { #lines - 1, 'RawkoHeader' })
    table.insert(rows, { task = task_id })
    local phases = live and live.phases or detail.phases or {}
    -- The subagents by the phase they work in; those of no phase shown go after the task's line.
    local by_phase, shown = {}, {}
    for _, node in ipairs(phases) do
      if node.kind ~= 'scope' and type(node.index) == 'number' then
        shown[node.index] = true
      end
    end
    for _, child in ipairs(children[task_id] or {}) do
      local at = (sub_of(child) or {}).phaseIndex
      if type(at) == 'number' and shown[at] then
        by_phase[at] = by_phase[at] or {}
        table.insert(by_phase[at], child)
      else
        add_subagent(child, 1)
      end
    end
    -- The external agent's own subagents, in the order they started.
    local whose = type(agent) == 'string' and agent ~= '' and agent or 'external'
    for _, sub in ipairs(live and live.external_subagents or {}) do
      table.insert(lines, ('  ↳ %s  %s  (%s subagent)'):format(sub.agent, sub.state, whose))
      table.insert(highlights, { #lines - 1, 'RawkoSubagent' })
      -- No rawko task: `task` is absent, so no key acts on the line.
      table.insert(rows, { external_subagent = sub.agent_id, of = task_id })
    end
    local statuses = statuses_of(phases, live or {})
    for i, node in ipairs(phases) do
      local name = (node.emoji and node.emoji ~= '' and node.emoji .. ' ' or '') .. node.name
      local indent = string.rep('  ', node.depth + 1)
      table.insert(lines, ('%s%s %s'):format(indent, marks[statuses[i]], name))
      table.insert(highlights, { #lines - 1, groups[statuses[i]] })
      local row = { task = task_id, index = node.index, name = node.name }
      row.current = statuses[i] == 'current' and node.index ~= nil
      table.insert(rows, row)
      if node.kind ~= 'scope' then
        for _, child in ipairs(node.index and by_phase[node.index] or {}) do
          add_subagent(child, node.depth + 2)
        end
      end
    end
  end
  -- First the tasks this Neovim follows that rawko did not list (started since, or elsewhere);
  -- a subagent under its parent.
  for _, task in ipairs(state.list()) do
    if not summaries[task.id] and not parent_of(task.id) then
      add(task.id)
    end
  end
  for _, summary in ipairs(view.listed) do
    if not parent_of(summary.taskId) then
      add(summary.taskId, summary)
    end
  end
  return lines, highlights, rows
end

--- Redraws the window, the cursor staying on its line.
local function redraw()
  if not (view and vim.api.nvim_win_is_valid(view.win)) then
    return
  end
  local lines, highlights, rows = render()
  view.rows = rows
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  for _, hl in ipairs(highlights) do
    vim.hl.range(view.buf, ns, hl[2], { hl[1], 0 }, { hl[1], -1 })
  end
  prompt.fit(view.win)
end

--- The client of task `id`: the one that runs it, else the one that listed it.
---@param id string
---@return vim.lsp.Client?
local function client_of(id)
  local task = state.tasks[id]
  return task and client.by_id(task.client_id) or view.client
end

--- Opens the context prompt of the phase under the cursor in a read-only Markdown buffer.
--- The phase row under the cursor, if the cursor is on a concrete phase.
---@return table?
local function phase_row()
  local row = view.rows[vim.api.nvim_win_get_cursor(0)[1]]
  return row and row.index and row or nil
end

--- Shows `text` in a read-only buffer named `name` of `filetype` in a floating window.
---@return integer buf, integer win
local function show_text(name, text, filetype, title)
  if vim.fn.bufexists(name) == 1 then
    vim.api.nvim_buf_delete(vim.fn.bufnr(name), { force = true })
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n'))
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  vim.bo[buf].filetype = filetype
  local win = prompt.float(buf, { title = title, footer = 'q close', enter = true, zindex = 55 })
  vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true })
  return buf, win
end

--- Opens the context prompt of the phase under the cursor in a read-only Markdown buffer.
local function open_phase()
  local row = phase_row()
  if not row then
    return
  end
  local params = { taskId = row.task, index = row.index }
  client.request('rawko/phasePrompt', params, function(result)
    result = type(result) == 'table' and result or {}
    local name = ('rawko://prompt/%s/%d'):format(row.task, row.index)
    local title = result.breadcrumbText or result.name or row.name
    local _, win = show_text(name, result.prompt or '', 'markdown', title)
    vim.wo[win].conceallevel = 2
  end, { client = client_of(row.task) })
end

--- Opens what the phase under the cursor changed (`rawko/phaseDiff`) in a read-only diff buffer.
local function open_diff()
  local row = phase_row()
  if not row then
    return
  end
  local params = { taskId = row.task, index = row.index }
  client.request('rawko/phaseDiff', params, function(result)
    local diff = type(result) == 'table' and type(result.diff) == 'string' and result.diff or ''
    if vim.trim(diff) == '' then
      vim.notify(('rawko: %s changed no file'):format(row.name), vim.log.levels.INFO)
      return
    end
    local name = ('rawko://diff/%s/%d'):format(row.task, row.index)
    show_text(name, (diff:gsub('\n$', '')), 'diff', ('%s: what the phase changed'):format(row.name))
  end, { client = client_of(row.task) })
end

--- How many paths a question lists before it says how many more there are.
local LISTED = 15

--- `paths` (at most LISTED of them) as lines indented by two spaces.
---@param paths string[]
---@return string[]
local function listed(paths)
  local lines = {}
  for i, path in ipairs(paths) do
    if i > LISTED then
      table.insert(lines, ('  … and %d more'):format(#paths - LISTED))
      break
    end
    table.insert(lines, '  ' .. path)
  end
  return lines
end

--- The lines of the question before a rewind to `phase`, from what its dry run says.
---@param phase string
---@param dry table the dry run's result
---@return string[]
function M.rewind_lines(phase, dry)
  local changes = {}
  for _, change in ipairs(dry.changes or {}) do
    table.insert(changes, ('%s %s'):format(change.action, change.path))
  end
  local lines = {}
  if #changes > 0 then
    table.insert(
      lines,
      ('These files go back to how they were when the task entered %s:'):format(phase)
    )
    vim.list_extend(lines, listed(changes))
  else
    table.insert(
      lines,
      ('No file changes: the workspace is as it was when the task entered %s.'):format(phase)
    )
  end
  table.insert(
    lines,
    ('The task goes back to the start of %s; what it did since is cut from its conversation, and it can be resumed from there.'):format(
      phase
    )
  )
  if #(dry.conflicts or {}) > 0 then
    table.insert(lines, 'You changed these files after the task last touched them:')
    vim.list_extend(lines, listed(dry.conflicts))
  end
  return lines
end

--- Asks a yes-or-no question through the plugin's prompt (a window with `lines`, then
--- vim.ui.select); returns whether the user chose `yes`. Must run in a coroutine.
---@param spec {title: string, lines: string[], question: string, yes: string, task_id: string, client_id?: integer}
---@return boolean
local function confirm(spec)
  local answer = prompt.ask({
    kind = 'rewind',
    title = spec.title,
    lines = spec.lines,
    question = spec.question,
    items = { { label = spec.yes, value = 'yes' }, { label = 'Cancel', value = 'no' } },
    task_id = spec.task_id,
    client_id = spec.client_id,
  })
  return answer == 'yes'
end

--- Rewinds the task under the cursor to the start of the phase under it: a dry run first, its
--- changes in the question; files the user changed since are overwritten only after a second
--- question.
local function rewind()
  local row = phase_row()
  if not row then
    return
  end
  local on = client_of(row.task)
  local params = { taskId = row.task, index = row.index }
  local function send(extra, on_result)
    client.request('rawko/rewindTask', vim.tbl_extend('force', params, extra), function(result)
      coroutine.wrap(on_result)(type(result) == 'table' and result or {})
    end, { client = on })
  end
  send({ dryRun = true }, function(dry)
    local phase = dry.phase or row.name
    local spec = { task_id = row.task, client_id = on and on.id }
    spec.title = ('rewind to %s'):format(phase)
    spec.lines = M.rewind_lines(phase, dry)
    spec.question = ('Rewind the task to the start of %s?'):format(phase)
    spec.yes = 'Rewind'
    if not confirm(spec) then
      return
    end
    local function done(result)
      if result.rewound then
        vim.notify(
          ('rawko: %s (r in :Rawko tasks resumes it)'):format(
            result.text ~= nil and result.text ~= '' and result.text
              or 'rewound to the start of ' .. phase
          ),
          vim.log.levels.INFO
        )
        -- The task's phases and place moved back: asked afresh.
        require('rawko.handlers').refetch(row.task)
        if view and vim.api.nvim_win_is_valid(view.win) then
          M.open()
        end
      else
        vim.notify('rawko: the task was not rewound: ' .. (result.text or ''), vim.log.levels.WARN)
      end
    end
    send({}, function(result)
      if result.rewound or #(result.conflicts or {}) == 0 then
        return done(result)
      end
      spec.title = ('you changed %d file(s) the rewind would overwrite'):format(#result.conflicts)
      spec.lines = vim.list_extend(
        { 'Changed by you after the task last touched them:' },
        listed(result.conflicts)
      )
      spec.question = 'Rewind anyway, overwriting your changes to them?'
      spec.yes = 'Rewind anyway'
      if confirm(spec) then
        send({ force = true }, done)
      end
    end)
  end)
end

--- Resumes the task under the cursor (a subagent on its line).
local function resume()
  local row = view.rows[vim.api.nvim_win_get_cursor(0)[1]]
  if row and row.task then
    require('rawko.commands').resume({ row.task }, client_of(row.task))
  end
end

--- Cancels the task under the cursor (a subagent on its line: the subagent, not its parent).
local function cancel()
  local row = view.rows[vim.api.nvim_win_get_cursor(0)[1]]
  if row and row.task then
    client.request('rawko/cancelTask', { taskId = row.task }, function()
      vim.notify(('rawko: cancelling %s'):format(row.task), vim.log.levels.INFO)
    end, { client = client_of(row.task) })
  end
end

--- Opens the window (afresh, when it is open), listing the tasks of the current project's rawko.
function M.open()
  client.request('rawko/listTasks', vim.empty_dict(), function(result, c)
    local listed = type(result) == 'table' and result.tasks or {}
    if #listed == 0 and #state.list() == 0 then
      vim.notify('rawko: no tasks yet; :Rawko start starts one', vim.log.levels.INFO)
      return
    end
    if view and vim.api.nvim_win_is_valid(view.win) then
      vim.api.nvim_win_close(view.win, true)
    end
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].bufhidden = 'wipe'
    vim.bo[buf].filetype = 'rawko_tasks'
    view = { buf = buf, listed = listed, details = {}, client = c, rows = {} }
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, (render())) -- for the window's width
    view.win = prompt.float(buf, {
      title = 'rawko tasks',
      footer = '<CR> phase prompt · d changes · R rewind · r resume · c cancel · q close',
      enter = true,
      zindex = 50,
    })
    vim.wo[view.win].cursorline = true
    redraw()
    for i, row in ipairs(view.rows) do
      if row.current then -- on the first task's current phase, ready for <CR>
        vim.api.nvim_win_set_cursor(view.win, { i, 0 })
        break
      end
    end
    for lhs, fn in pairs({
      ['<CR>'] = open_phase,
      d = open_diff,
      R = rewind,
      r = resume,
      c = cancel,
    }) do
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true })
    end
    vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true })
    -- The marks follow the statuses; a task that is not followed here is asked about once.
    local group = vim.api.nvim_create_augroup('rawko_tasks', { clear = true })
    vim.api.nvim_create_autocmd('User', {
      group = group,
      pattern = 'RawkoStatus',
      callback = function()
        redraw()
      end,
    })
    vim.api.nvim_create_autocmd('BufWipeout', {
      group = group,
      buffer = buf,
      callback = function()
        vim.api.nvim_del_augroup_by_id(group)
      end,
    })
    local shown = view
    for _, summary in ipairs(listed) do
      if not state.tasks[summary.taskId] and summary.stateClass ~= 'finished' then
        c:request('rawko/getTask', { taskId = summary.taskId }, function(err, got)
          if not err and type(got) == 'table' and shown == view then
            view.details[summary.taskId] = got.task
            redraw()
          end
        end)
      end
    end
  end)
end

return M
