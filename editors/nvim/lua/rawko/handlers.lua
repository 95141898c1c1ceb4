--- Handlers of what `rawko serve` sends the editor (docs/protocol.md, "Server → client"):
--- the task notifications that drive the statusline and the output buffer, and the requests that
--- ask the user (approving a blocked tool call, trusting a workspace's hooks, and the standard
--- `window/showMessageRequest`, with which rawko offers to open its web page).
---
--- `lsp/rawko.lua` puts these into the LSP config's `handlers`, so they are called by Neovim's
--- LSP client as `handler(err, params, ctx)`; a request handler runs in a coroutine and returns
--- `result, err`.

local M = {}

local output = require('rawko.output')
local prompt = require('rawko.prompt')
local state = require('rawko.state')

local request_cancelled = vim.lsp.protocol.ErrorCodes.RequestCancelled

--- Takes where task `task` is from rawko: a `rawko/status`, or the task `rawko/getTask` gave.
---@param task rawko.Task
---@param text string the status line
---@param from table
local function take(task, text, from)
  task.state = from.state or task.state
  task.state_class = from.stateClass or task.state_class
  task.external = from.external == true
  task.external_agent_name = from.externalAgentName
  -- A subagent stays one: a message without the field says nothing new of it.
  task.subagent = state.subagent_of(from) or task.subagent
  task.actions = from.actions or {}
  task.stopped = nil
  task.text = text
  task.breadcrumb_text = from.breadcrumbText or ''
  task.breadcrumb_levels = from.breadcrumbLevels or {}
  task.state_text = from.stateText or ''
  task.breadcrumb = from.breadcrumb or {}
  task.workflow = from.workflow
  -- A countdown's status comes before its first tick, and the ticks set it again.
  task.countdown = nil
  -- A session that ended has no subagent of its own running any more.
  state.stop_external_subagents(task)
end

--- Fetches task `task` with `rawko/getTask`: whole after a gap in its notifications, else its
--- phases and (for a task this editor did not start, e.g. an external agent's) its description.
---@param task rawko.Task
---@param whole? boolean
local function fetch(task, whole)
  local client = require('rawko.client').by_id(task.client_id)
  if not client then
    return
  end
  client:request('rawko/getTask', { taskId = task.id }, function(err, result)
    local detail = not err and type(result) == 'table' and result.task
    if type(detail) ~= 'table' then
      return
    end
    task.description = task.description or detail.description
    task.subagent = state.subagent_of(detail) or task.subagent
    task.phases = detail.phases
    if whole then
      take(task, detail.breadcrumbText or task.text, detail)
      if detail.stateClass ~= 'finished' then
        task.outcome = nil -- e.g. a finished task rewound to a phase
      end
      -- The phases' own marks are the news.
      task.phase_index, task.phases_done = nil, nil
    end
    require('rawko').redraw()
  end)
end

--- After a gap in task `id`'s notifications: fetches it whole.
local function refetch(id, client_id)
  fetch(state.task(id, client_id), true)
end

--- Fetches the task `id` this editor follows whole (after a rewind, which takes it back to a
--- phase without a status); does nothing for a task it does not follow.
---@param id string
function M.refetch(id)
  local task = state.tasks[id]
  if task then
    fetch(task, true)
  end
end

--- A handler of a task's notification: `apply(task, params)` runs in the task's `seq` order.
---@param apply fun(task: rawko.Task, params: table)
local function task_notification(apply)
  return function(_, params, ctx)
    if type(params) == 'table' and type(params.taskId) == 'string' then
      state.deliver(params.taskId, ctx.client_id, params.seq, function()
        apply(state.task(params.taskId, ctx.client_id), params)
      end, refetch)
    end
  end
end

--- `rawko/status`: the task's state, breadcrumb or status line changed.
M.status = task_notification(function(task, params)
  local before_text = task.text
  take(task, params.text or '', params)
  task.reason = params.reason
  -- Where the phases stand, as rawko counts them: done below `phasesDone`, current at
  -- `phaseIndex`.
  task.phase_index = params.phaseIndex
  task.phases_done = params.phasesDone
  state.touch(task)
  if not state.waits_for_approval(task) then
    -- The approval ended (answered, timed out, or the task was cancelled). Not a team task's
    -- (`rawko serve --nats`): its status is the team's record of it, which may lag behind the
    -- question or come from the worker that took the task over, and a question withdrawn here
    -- would be answered `cancelled` for the whole team. rawko withdraws that one by its tool
    -- call (`rawko/approvalWithdrawn`) once anyone answered it or the task stopped waiting.
    prompt.withdraw_task(task.id, 'approval', { keep_team = true })
  end
  output.status(task, before_text)
  if
    task.reason
    and require('rawko.config').get().statusline.notify_reasons
    -- Not for an approval (its prompt says why) nor an end (the summary does).
    and state.is_active(task)
    and not state.waits_for_approval(task)
  then
    vim.notify(('rawko: %s'):format(task.reason), vim.log.levels.WARN)
  end
  if
    task.external
    and not task.workflow
    and state.is_active(task)
    and not task.told_no_workflow
  then
    -- An external agent's session begun without a workflow: say once how to pick one.
    task.told_no_workflow = true
    vim.notify(
      ('rawko: external session %s runs no workflow yet — :Rawko workflow picks one'):format(
        task.id
      ),
      vim.log.levels.INFO
    )
  end
  if task.fetched ~= (task.workflow or '') then
    -- A task first seen, or one whose workflow changed: its phases (and description) once; the
    -- phase marks then move with each status's phaseIndex.
    task.fetched = task.workflow or ''
    fetch(task)
  end
  require('rawko').redraw()
end)

--- `rawko/countdown`: a tick of the countdown before the not-done reminder.
M.countdown = task_notification(function(task, params)
  task.state = 'countdown'
  task.countdown = { secondsLeft = params.secondsLeft, text = params.text, label = params.label }
  state.touch(task)
  require('rawko').redraw()
end)

--- `rawko/output`: something for the output buffer; one of kind `subagent` (an external
--- agent's own subagent started or stopped) also goes into the task's list of them, which
--- `:Rawko tasks` shows under the task.
M.output = task_notification(function(task, params)
  output.output(task, params)
  if state.external_subagent(task, params) then
    require('rawko').redraw()
  end
end)

--- `rawko/taskFinished`: the task ended.
M.task_finished = task_notification(function(task, params)
  task.outcome = params.outcome or 'complete'
  task.summary = params.summary or ''
  task.state = task.outcome
  task.state_class = 'finished'
  task.countdown = nil
  state.stop_external_subagents(task)
  state.touch(task)
  prompt.withdraw_task(task.id, 'approval')
  output.finished(task)
  local level = task.outcome == 'complete' and vim.log.levels.INFO or vim.log.levels.WARN
  vim.notify(('rawko: task %s: %s'):format(task.outcome, output.first_line(task.summary)), level)
  require('rawko').redraw()
end)

--- The approval options: the words of the choice, and of the answer in the output buffer.
local options = {
  allow_once = { 'Allow once', 'Allowed once' },
  allow_always = { 'Always allow', 'Always allowed' },
  reject_once = { 'Deny', 'Denied by you' },
  reject_always = { 'Always deny', 'Always denied' },
}

--- Pretty-prints a JSON value, keys sorted, two spaces per level.
---@param value any
---@param indent? string
---@return string
function M.json(value, indent)
  indent = indent or ''
  if type(value) ~= 'table' then
    local ok, encoded = pcall(vim.json.encode, value)
    return ok and encoded or tostring(value)
  elseif vim.tbl_isempty(value) then
    return '{}'
  end
  local list, inner, parts = vim.islist(value), indent .. '  ', {}
  local keys = vim.tbl_keys(value)
  table.sort(keys) -- decoded JSON: all strings, or (a list) all numbers
  for _, key in ipairs(keys) do
    local name = list and '' or vim.json.encode(tostring(key)) .. ': '
    table.insert(parts, inner .. name .. M.json(value[key], inner))
  end
  local open, close = unpack(list and { '[', ']' } or { '{', '}' })
  return open .. '\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. close
end

--- Lines `label value`, the value's later lines indented under its first.
---@param lines string[]
---@param highlights table[]
---@param label string
---@param value string
local function field(lines, highlights, label, value)
  table.insert(highlights, { line = #lines, col = 0, end_col = #label, group = 'RawkoPromptLabel' })
  vim.list_extend(lines, output.prefixed(label .. string.rep(' ', math.max(1, 8 - #label)), value))
end

--- The reason for people of `rawko/approveToolCall` params (`detail`; `reason`, written for the
--- model, when rawko sends none); a subagent's starts with its label (added when missing).
---@param params table
---@return string?
function M.approval_reason(params)
  local text = params.detail or params.reason
  local sub = state.subagent_of(params)
  local label = sub and sub.label
  if type(text) == 'string' and type(label) == 'string' and label ~= '' then
    if not vim.startswith(text, label) then
      text = label .. ': ' .. text
    end
  end
  return text
end

--- The approval window's lines and highlights for `rawko/approveToolCall` params.
---@param params table
---@return string[] lines, table[] highlights
function M.approval_lines(params)
  local lines, highlights = {}, {}
  local sub = state.subagent_of(params)
  if sub then
    -- Whose call it is: `reviewer (subagent of task-1795-1)`.
    field(lines, highlights, 'Subagent', tostring(sub.label or sub.name or sub.profile or '?'))
  end
  field(lines, highlights, 'Tool', tostring(params.tool or '?'))
  field(lines, highlights, 'Phase', tostring(params.phase or '?'))
  if params.summary then
    field(lines, highlights, 'Call', params.summary)
  end
  local task = state.tasks[params.taskId]
  if task and task.description then
    field(lines, highlights, 'Task', task.description)
  end
  -- `detail` is the reason written for people; `reason` (for the model) when rawko sends none.
  field(lines, highlights, 'Reason', tostring(M.approval_reason(params) or ''))
  if params.expiresAt then
    -- The deadline in this machine's time of day; what happens then in rawko's words.
    local at = os.date('%H:%M:%S', math.floor(params.expiresAt / 1000))
    local what = params.timeoutText and (' — %s'):format(params.timeoutText) or ''
    field(lines, highlights, 'Expires', at .. what)
  end
  table.insert(highlights, { line = #lines, col = 0, end_col = 5, group = 'RawkoPromptLabel' })
  table.insert(lines, 'Input')
  local input = vim.split(M.json(params.input), '\n', { plain = true })
  local max = require('rawko.config').get().approval.max_input_lines
  for i, line in ipairs(input) do
    if i > max then
      table.insert(lines, ('  … %d more lines'):format(#input - max))
      break
    end
    table.insert(lines, '  ' .. line)
  end
  return lines, highlights
end

--- Asks the user `spec` for a server request (from its handler's coroutine); returns
--- `respond(answer)`, or nil and the error that tells rawko it was withdrawn.
---@param spec rawko.PromptSpec
---@param ctx lsp.HandlerContext
---@param respond fun(answer: any): table
local function ask(spec, ctx, respond)
  spec.client_id = ctx.client_id
  local answer = prompt.ask(spec)
  if answer == prompt.WITHDRAWN then
    return nil, vim.lsp.rpc_response_error(request_cancelled, 'the question was withdrawn')
  end
  return respond(answer)
end

--- Whether `rawko/approveToolCall` params are about a team task (`rawko serve --nats`, a task
--- a worker on another machine runs): rawko ends their `detail` with `(team task on WORKER)`.
---@param params table
---@return boolean
function M.is_team_approval(params)
  return type(params) == 'table'
    and type(params.detail) == 'string'
    and params.detail:match(' %(team task on .+%)$') ~= nil
end

--- `rawko/approveToolCall`: a tool call the phase does not allow waits for the user's answer.
--- The task may be one this editor never started nor heard of (an external agent's session, a
--- team task): it is asked all the same.
function M.approve_tool_call(_, params, ctx)
  -- The offer to open the web page gives way: the approval is what the user must see now.
  prompt.withdraw_messages(ctx.client_id)
  -- The refusals first: a vim.ui.select that preselects the first item never defaults to allowing.
  local items = {}
  for _, allowing in ipairs({ false, true }) do
    for _, option in ipairs(params.options or {}) do
      if vim.startswith(option, 'allow') == allowing then
        table.insert(items, { label = (options[option] or { option })[1], value = option })
      end
    end
  end
  local task = state.task(params.taskId, ctx.client_id)
  local lines, highlights = M.approval_lines(params)
  local tool = tostring(params.tool or 'the tool')
  -- Not the reason written for the model: without `detail`, the plugin's own words.
  local why = M.approval_reason({
    detail = params.detail or ('%s is blocked in phase %s'):format(tool, params.phase),
    subagent = params.subagent,
  })
  local sub = state.subagent_of(params)
  local who = sub and type(sub.label) == 'string' and sub.label ~= '' and sub.label .. ': ' or ''
  return ask(
    {
      kind = 'approval',
      -- A subagent's call names the subagent: `rawko: reviewer (subagent of task-1): allow Write?`.
      title = ('rawko: %sallow %s?'):format(who, tool),
      lines = lines,
      highlights = highlights,
      question = ('rawko: %s — allow it?'):format(why),
      items = items,
      task_id = params.taskId,
      tool_call_id = params.toolCallId,
      team = M.is_team_approval(params),
    },
    ctx,
    function(answer)
      answer = answer or 'cancelled'
      local words = answer == 'cancelled' and 'Dismissed; not run'
        or (options[answer] or { answer, answer })[2]
      output.answered(task, vim.startswith(answer, 'allow'), words, params.summary or tool)
      return { outcome = answer }
    end
  )
end

--- `rawko/trustWorkspace`: the workspace has hooks (commands rawko would run) or settings that
--- choose what runs and where keys go (`providers`, `arbiter`, `apiKeys`); may rawko use them?
function M.trust_workspace(_, params, ctx)
  local lines, highlights = {}, {}
  local settings = type(params.settings) == 'table' and params.settings or {}
  field(lines, highlights, 'Workspace', tostring(params.workspace))
  if params.changed then
    vim.list_extend(lines, {
      '',
      #settings > 0 and 'What this workspace asks you to trust changed since it was last trusted.'
        or 'The hooks changed since this workspace was last trusted.',
    })
  end
  if #(params.hooks or {}) > 0 or #settings == 0 then
    vim.list_extend(lines, { '', 'rawko would run these hooks:' })
    for _, hook in ipairs(params.hooks or {}) do
      table.insert(lines, '  ' .. tostring(hook))
    end
    if #(params.hooks or {}) == 0 then
      table.insert(lines, '  (none listed)')
    end
  end
  if #settings > 0 then
    vim.list_extend(
      lines,
      { '', 'rawko would use these settings (what runs, where your keys go):' }
    )
    for _, setting in ipairs(settings) do
      table.insert(lines, '  ' .. tostring(setting))
    end
  end
  local trust_label = #settings > 0 and 'Trust the workspace' or 'Trust and run hooks'
  local changed_title = #settings > 0 and 'rawko: the workspace changed; trust it?'
    or 'rawko: the hooks changed; trust them?'
  local question = #settings > 0 and 'rawko: trust %s and use its settings?'
    or 'rawko: run the hooks of %s?'
  return ask(
    {
      kind = 'trust',
      workspace = params.workspace,
      title = params.changed and changed_title or 'rawko: trust this workspace?',
      lines = lines,
      highlights = highlights,
      question = question:format(vim.fn.fnamemodify(params.workspace, ':~')),
      items = {
        { label = trust_label, value = true },
        { label = "Don't trust", value = false },
      },
    },
    ctx,
    function(answer)
      return { trusted = answer == true }
    end
  )
end

--- The titles of `window/showMessageRequest` by message type (1 error, 2 warning).
local message_titles = { [1] = 'rawko: error', [2] = 'rawko: warning' }

--- `window/showMessageRequest`: a message with actions (rawko offers to open its web page). Asked
--- like the other questions; returns the chosen action, or null when the user dismissed it.
function M.show_message_request(_, params, ctx)
  params = type(params) == 'table' and params or {}
  local message = tostring(params.message or '')
  local items, titles = {}, {}
  for _, action in ipairs(type(params.actions) == 'table' and params.actions or {}) do
    if type(action) == 'table' and type(action.title) == 'string' then
      table.insert(items, { label = action.title, value = action })
      table.insert(titles, action.title)
    end
  end
  table.insert(items, { label = 'Dismiss', value = vim.NIL })
  return ask(
    {
      kind = 'message',
      title = message_titles[params.type] or 'rawko',
      lines = vim.split(message, '\n', { plain = true }),
      question = #titles > 0 and ('rawko: %s or dismiss?'):format(table.concat(titles, ', '))
        or 'rawko: dismiss the message?',
      items = items,
    },
    ctx,
    function(answer)
      -- nil: the user closed the question without choosing.
      return answer or vim.NIL
    end
  )
end

--- `rawko/trustWithdrawn`: rawko withdrew its trust question about a workspace (no answer in
--- time); the question closes.
function M.trust_withdrawn(_, params)
  if type(params) == 'table' and params.workspace then
    prompt.withdraw_trust(params.workspace)
  end
end

--- `rawko/approvalWithdrawn`: rawko withdrew the approval of a tool call (it timed out, or the
--- task stopped waiting for it); its question closes.
function M.approval_withdrawn(_, params)
  if type(params) == 'table' and params.taskId and params.toolCallId then
    prompt.withdraw_call(params.taskId, params.toolCallId)
  end
end

return M
