--- What the plugin knows about rawko's tasks: each task's state, breadcrumb, countdown and
--- outcome, kept up to date from the server's notifications applied in `seq` order, and which
--- task the statusline follows.
---
--- rawko numbers a task's notifications (`rawko/status`, `rawko/countdown`, `rawko/output`,
--- `rawko/taskFinished`) from 1 per server process. A notification that comes early waits until
--- the ones before it arrived; one that never arrives is given up on after a short while, and the
--- task's state is then fetched whole with `rawko/getTask`. A task first seen in the middle of its
--- stream (started by an external agent, or before this editor connected) starts from the first
--- notification seen, and a stream that starts again at 1 (the task resumed by a new server)
--- starts afresh.
---
--- A subagent (a task another task's `delegate_to_subagents` call started: rawko says so with
--- `subagent`) is kept like any task, but the statusline follows the top-level tasks only.
--- An external agent's own subagents (Claude Code's Task tool), which rawko reports as output of
--- kind `subagent` of the agent's session, are no tasks: the session's task keeps a list of them
--- (`external_subagents`), each running from its `started` line until its `stopped` line or the
--- session's end.

local M = {}

---@class rawko.Task
---@field id string
---@field client_id? integer the LSP client whose server runs the task
---@field description? string
---@field workflow? string
---@field state string a TaskState of docs/protocol.md
---@field state_class string what the state means, as rawko said: busy, waiting or finished
---@field external? boolean an external agent's session, as rawko said
---@field external_agent_name? string that agent's name, as rawko words it (`Gemini CLI`)
---@field actions? string[] the commands the task accepts now, as rawko said (`resume`, `retry`, …)
---@field text string the status line rawko gave
---@field breadcrumb table[] the breadcrumb items
---@field breadcrumb_text? string where the task is, without its state, as rawko gave it
---@field breadcrumb_levels? string[] the breadcrumb's levels, outermost first, as rawko gave them
---@field state_text? string the state in words after the breadcrumb, as rawko gave it
---@field stopped? boolean its server stopped while the task was active
---@field reason? string why the state last changed
---@field countdown? {secondsLeft: integer, text: string, label: string} while the countdown runs
---@field outcome? string once finished: complete, failed or cancelled
---@field summary? string once finished
---@field touched integer when the task last changed (vim.uv.hrtime(): higher is later)
---@field told_no_workflow? boolean an external session without a workflow was told about
---@field phases? table[] its workflow's phases, flattened (`PhaseNode`s of rawko/getTask)
---@field phase_index? number the current phase's `index` among them, from the last status
---@field phases_done? number how many of them are done, from the last status
---@field fetched? string the workflow (or '') that rawko/getTask was last asked about for it
---@field subagent? rawko.Subagent set when the task is a subagent, as rawko said
---@field external_subagents? rawko.ExternalSubagent[] an external agent's own subagents, in the order they started

---@class rawko.Subagent rawko's `SubagentInfo`
---@field parentTaskId string the task that delegated
---@field toolCallId string its `delegate_to_subagents` call
---@field index integer the subagent's place among that call's tasks, from 0
---@field profile string the profile it runs, e.g. `reviewer`
---@field name string its name to show (the call's name for it, else the profile)
---@field label string e.g. `reviewer (subagent of task-1795-1)`
---@field phaseIndex? integer the parent's phase it works in (a `PhaseNode.index` of the parent)

---@class rawko.ExternalSubagent an external agent's own subagent, from its session's output
---@field agent_id string its id, as the external agent names it (`agentId`)
---@field agent string its type (`agent`), e.g. `Explore`
---@field state string running, or complete once it stopped (or the session ended)
---@field started integer when it was first heard of (vim.uv.hrtime())
---@field ended? integer when it stopped

---@type table<string, rawko.Task>
M.tasks = {}

--- The task the user started or resumed last, which the statusline follows while it is active.
---@type string?
M.focused = nil

--- When something changed, for ordering (higher is later).
local tick = vim.uv.hrtime

--- Per task: the next seq expected, the notifications that came early, and what to do after a gap.
---@type table<string, {client_id: integer?, next: integer, pending: table<integer, fun()>, timer: uv.uv_timer_t?, on_gap: fun(id: string, client_id: integer?)}>
local streams = {}

--- How long a gap in `seq` may stay open before the plugin stops waiting for the missing one.
M.gap_timeout_ms = 300

--- A task is active while rawko does not call it finished and its server has not stopped.
---@param task rawko.Task
---@return boolean
function M.is_active(task)
  return task.state_class ~= 'finished' and not task.stopped
end

--- Whether rawko says `task` (a task, or a summary rawko/listTasks gave) accepts `action` now
--- (its `actions`: `resume`, `retry`, `interrupt`, …), so no state name is tested.
---@param task {actions?: string[]}
---@param action string
---@return boolean
function M.accepts(task, action)
  return vim.tbl_contains(task.actions or {}, action)
end

--- Whether `task` waits for an approval: the one wait that still takes an interrupt.
---@param task rawko.Task
---@return boolean
function M.waits_for_approval(task)
  return task.state_class == 'waiting' and M.accepts(task, 'interrupt')
end

--- The task with `id`, created when unknown.
---@param id string
---@param client_id? integer
---@return rawko.Task
function M.task(id, client_id)
  local task = M.tasks[id]
  if not task then
    task = {
      id = id,
      state = 'running',
      state_class = 'busy',
      text = '',
      breadcrumb = {},
      touched = tick(),
    }
    M.tasks[id] = task
  end
  task.client_id = client_id or task.client_id
  return task
end

--- The `SubagentInfo` rawko gave with a task (a task, or a summary or detail rawko/listTasks or
--- rawko/getTask gave), when it is a subagent.
---@param task table
---@return rawko.Subagent?
function M.subagent_of(task)
  local sub = type(task) == 'table' and task.subagent or nil
  if type(sub) == 'table' and type(sub.parentTaskId) == 'string' then
    return sub
  end
  return nil
end

--- Whether an output line of kind `subagent` tells of the subagent's stop: its last words are
--- `stopped (agent-123)` rather than `started (agent-123)`.
---@param text string
---@return boolean
function M.subagent_stopped(text)
  local last
  for verb in tostring(text or ''):gmatch(' (st%a+) %(') do
    if verb == 'started' or verb == 'stopped' then
      last = verb
    end
  end
  return last == 'stopped'
end

--- Takes an output line of `task` (`rawko/output`'s params): one of kind `subagent` (an external
--- agent's own subagent started or stopped) adds the subagent to `task.external_subagents`, or
--- marks it complete. Returns whether the list changed.
---@param task rawko.Task
---@param params table
---@return boolean
function M.external_subagent(task, params)
  if params.kind ~= 'subagent' then
    return false
  end
  local agent = type(params.agent) == 'string' and params.agent or ''
  local id = type(params.agentId) == 'string' and params.agentId ~= '' and params.agentId or agent
  if id == '' then
    return false
  end
  task.external_subagents = task.external_subagents or {}
  local sub
  for _, known in ipairs(task.external_subagents) do
    if known.agent_id == id then
      sub = known
    end
  end
  if not sub then
    sub =
      { agent_id = id, agent = agent ~= '' and agent or id, state = 'running', started = tick() }
    table.insert(task.external_subagents, sub)
  elseif agent ~= '' then
    sub.agent = agent
  end
  if M.subagent_stopped(params.text) then
    sub.state = 'complete'
    sub.ended = sub.ended or tick()
  else
    sub.state, sub.ended = 'running', nil -- started (again)
  end
  return true
end

--- Marks the external subagents of `task` that still run complete, once the task has finished.
---@param task rawko.Task
function M.stop_external_subagents(task)
  if task.state_class ~= 'finished' then
    return
  end
  for _, sub in ipairs(task.external_subagents or {}) do
    if sub.state == 'running' then
      sub.state = 'complete'
      sub.ended = sub.ended or tick()
    end
  end
end

--- The top-level task `task` belongs to: itself, or for a subagent the task that delegated to it
--- (through its parent's parent, …); nil while that task is not known here.
---@param task rawko.Task?
---@return rawko.Task?
function M.top_level(task)
  local seen = {}
  while task and task.subagent do
    if seen[task.id] then
      return nil -- parents that name each other
    end
    seen[task.id] = true
    task = M.tasks[task.subagent.parentTaskId]
  end
  return task
end

--- Makes `id` the task the statusline follows.
---@param id string
function M.focus(id)
  M.focused = id
  M.task(id).touched = tick()
end

--- The task the statusline shows, a top-level one (never a subagent: a focused subagent's parent
--- stands for it): the focused one while it is active, else the active task that changed last,
--- else the focused one (finished), else the task that changed last.
---@return rawko.Task?
function M.current()
  local focused = M.focused and M.top_level(M.tasks[M.focused])
  if focused and M.is_active(focused) then
    return focused
  end
  local list = vim.tbl_filter(function(task)
    return not task.subagent
  end, M.list())
  return vim.iter(list):find(M.is_active) or focused or list[1]
end

--- The active top-level tasks other than `task` (subagents are not counted).
---@param task rawko.Task?
---@return integer
function M.other_active(task)
  return #vim.tbl_filter(function(other)
    return other ~= task and not other.subagent and M.is_active(other)
  end, vim.tbl_values(M.tasks))
end

--- The tasks, the one that changed last first.
---@return rawko.Task[]
function M.list()
  local list = vim.tbl_values(M.tasks)
  table.sort(list, function(a, b)
    return a.touched > b.touched
  end)
  return list
end

--- The words after the breadcrumb of a task whose server stopped: the plugin's own news, as
--- rawko cannot send it.
M.STOPPED_TEXT = ' — rawko stopped'

--- Where `task` is and how it stands, for the statusline: `where` (the breadcrumb, else the
--- description), then its state as rawko said it (`stateText`: ` — waiting for approval`); while
--- the countdown runs, the countdown's text and a short form (` ⏳ 3s`) for when room is short.
---@param task rawko.Task
---@return string where, string state, string? short
function M.parts(task)
  local crumb = task.breadcrumb_text or ''
  local where = crumb ~= '' and crumb or task.description or task.id
  -- Each rawko/status clears the countdown; its ticks set it again while it runs.
  local countdown = task.countdown
  if task.stopped then
    return where, M.STOPPED_TEXT
  elseif countdown then
    local short = countdown.secondsLeft and (' ⏳ %ds'):format(countdown.secondsLeft)
    return where, ' ' .. countdown.text, short
  end
  return where, task.state_text or ''
end

--- The levels of `where` (as `parts` gives it) for shortening: rawko's breadcrumb levels when
--- `where` is the breadcrumb, else `where` as one level.
---@param task rawko.Task
---@param where string
---@return string[]
function M.levels(task, where)
  local levels = task.breadcrumb_levels
  if where == task.breadcrumb_text and type(levels) == 'table' and #levels > 0 then
    return levels
  end
  return { where }
end

--- The statusline text of `task`, whole: where it is and how it stands.
---@param task rawko.Task
---@return string
function M.describe(task)
  local where, how = M.parts(task)
  return M.agent_prefix(task) .. where .. how
end

--- What names an external agent's session before its status: `Gemini CLI: `; empty for
--- rawko's own tasks.
---@param task rawko.Task
---@return string
function M.agent_prefix(task)
  local name = task.external_agent_name
  return type(name) == 'string' and name ~= '' and name .. ': ' or ''
end

--- Stops the gap timer of `stream`, if it runs.
---@param stream? table
local function stop_timer(stream)
  local timer = stream and stream.timer
  if timer and not timer:is_closing() then
    timer:stop()
    timer:close()
  end
  if stream then
    stream.timer = nil
  end
end

--- Applies the notifications of `stream` that are next in order; after a gap, waits a little for
--- the missing one, then goes on without it and calls `stream.on_gap(id, client_id)`.
---@param id string
---@param stream table
local function drain(id, stream)
  while stream.pending[stream.next] do
    local apply = stream.pending[stream.next]
    stream.pending[stream.next] = nil
    stream.next = stream.next + 1
    apply()
  end
  if next(stream.pending) == nil then
    stop_timer(stream)
  elseif not stream.timer then
    stream.timer = vim.defer_fn(function()
      stream.timer = nil
      if streams[id] == stream and next(stream.pending) ~= nil then
        stream.next = math.min(unpack(vim.tbl_keys(stream.pending)))
        drain(id, stream)
        stream.on_gap(id, stream.client_id)
      end
    end, M.gap_timeout_ms)
  end
end

--- Runs `apply` for the notification `seq` of task `id` in seq order; `on_gap(id, client_id)`
--- after a gap before it was given up on (to fetch the task whole).
---@param id string
---@param client_id? integer
---@param seq? integer
---@param apply fun()
---@param on_gap fun(id: string, client_id: integer?)
function M.deliver(id, client_id, seq, apply, on_gap)
  if type(seq) ~= 'number' then
    apply()
    return
  end
  local stream = streams[id]
  if not stream or seq == 1 or (client_id and stream.client_id ~= client_id) then
    stop_timer(stream)
    stream = { client_id = client_id, next = seq, pending = {}, on_gap = on_gap }
    streams[id] = stream
  end
  if seq >= stream.next then -- else a duplicate, or from before a gap that was given up on
    stream.pending[seq] = apply
    drain(id, stream)
  end
end

--- Marks the active tasks of a server that stopped as interrupted: rawko lists them so once it
--- runs again, and `:Rawko tasks` resumes them.
---@param client_id integer
function M.client_stopped(client_id)
  for id, task in pairs(M.tasks) do
    if task.client_id == client_id and M.is_active(task) then
      task.state = 'interrupted'
      task.stopped = true
      task.countdown = nil
      task.touched = tick()
    end
    if streams[id] and streams[id].client_id == client_id then
      stop_timer(streams[id])
      streams[id] = nil
    end
  end
end

--- Records that `task` changed now.
---@param task rawko.Task
function M.touch(task)
  task.touched = tick()
end

--- Forgets everything (for tests).
function M._reset()
  for _, stream in pairs(streams) do
    stop_timer(stream)
  end
  streams = {}
  M.tasks = {}
  M.focused = nil
end

return M
