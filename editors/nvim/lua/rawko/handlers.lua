--- Handlers of what `rawko serve` sends the editor (docs/protocol.md, "Server → client"):
--- the task notifications that drive the statusline and the output buffer, and the requests that
--- ask the user (approving a blocked tool call, trusting a workspace's hooks).
---
--- `lsp/rawko.lua` puts these into the LSP config's `handlers`, so they are called by Neovim's
--- LSP client as `handler(err, params, ctx)`; a request handler runs in a coroutine and returns
--- `result, err`.

local M = {}

local state = require('rawko.state')

local function output()
  return require('rawko.output')
end

local function prompt()
  return require('rawko.prompt')
end

local function ui()
  return require('rawko.ui')
end

local request_cancelled = -32800

--- Fetches the description of a task this editor did not start (e.g. an external agent's).
---@param task rawko.Task
local function learn(task)
  if task.description or task.learning then
    return
  end
  local client = require('rawko.client').by_id(task.client_id)
  if not client then
    return
  end
  task.learning = true
  client:request('rawko/getTask', { taskId = task.id }, function(err, result)
    if err or type(result) ~= 'table' or type(result.task) ~= 'table' then
      return
    end
    task.description = task.description or result.task.description
    task.workflow = task.workflow or result.task.workflow
    ui().redraw()
  end)
end

-- After a gap in a task's notifications: fetch the task whole.
state.on_gap = function(id, client_id)
  local client = require('rawko.client').by_id(client_id)
  if not client then
    return
  end
  client:request('rawko/getTask', { taskId = id }, function(err, result)
    if err or type(result) ~= 'table' or type(result.task) ~= 'table' then
      return
    end
    local task = state.task(id, client_id)
    local detail = result.task
    task.state = detail.state or task.state
    task.text = detail.breadcrumbText or task.text
    task.breadcrumb_text = detail.breadcrumbText or task.breadcrumb_text
    task.breadcrumb = detail.breadcrumb or task.breadcrumb
    task.workflow = detail.workflow
    task.description = task.description or detail.description
    if task.state ~= 'countdown' then
      task.countdown = nil
    end
    ui().redraw()
  end)
end

---@param params any
---@return boolean
local function about_a_task(params)
  return type(params) == 'table' and type(params.taskId) == 'string'
end

--- `rawko/status`: the task's state, breadcrumb or status line changed.
function M.status(_, params, ctx)
  if not about_a_task(params) then
    return
  end
  state.deliver(params.taskId, ctx.client_id, params.seq, function()
    local task = state.task(params.taskId, ctx.client_id)
    local before_text = task.text
    task.state = type(params.state) == 'string' and params.state or task.state
    task.text = type(params.text) == 'string' and params.text or ''
    task.breadcrumb_text = type(params.breadcrumbText) == 'string' and params.breadcrumbText or ''
    task.breadcrumb = type(params.breadcrumb) == 'table' and params.breadcrumb or {}
    task.workflow = type(params.workflow) == 'string' and params.workflow or nil
    task.reason = type(params.reason) == 'string' and params.reason or nil
    if task.state ~= 'countdown' then
      task.countdown = nil
    end
    state.touch(task)
    if task.state ~= 'waiting_approval' then
      -- The approval ended (answered, timed out, or the task was cancelled).
      prompt().withdraw_task(task.id, 'approval')
    end
    output().status(task, before_text)
    local config = require('rawko.config').get()
    if
      task.reason
      and config.statusline.notify_reasons
      and (task.state == 'running' or task.state == 'blocked')
    then
      vim.notify(('rawko: %s'):format(task.reason), vim.log.levels.WARN)
    end
    if
      vim.startswith(task.id, 'ext-')
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
    learn(task)
    ui().redraw()
  end)
end

--- `rawko/countdown`: a tick of the countdown before the not-done reminder.
function M.countdown(_, params, ctx)
  if not about_a_task(params) then
    return
  end
  state.deliver(params.taskId, ctx.client_id, params.seq, function()
    local task = state.task(params.taskId, ctx.client_id)
    task.state = 'countdown'
    task.countdown = {
      secondsLeft = tonumber(params.secondsLeft) or 0,
      text = type(params.text) == 'string' and params.text
        or ('⏳ Auto-continuing in %ss'):format(params.secondsLeft),
    }
    state.touch(task)
    ui().redraw()
  end)
end

--- `rawko/output`: something for the output buffer.
function M.output(_, params, ctx)
  if not about_a_task(params) then
    return
  end
  state.deliver(params.taskId, ctx.client_id, params.seq, function()
    local task = state.task(params.taskId, ctx.client_id)
    output().output(task, params)
  end)
end

--- `rawko/taskFinished`: the task ended.
function M.task_finished(_, params, ctx)
  if not about_a_task(params) then
    return
  end
  state.deliver(params.taskId, ctx.client_id, params.seq, function()
    local task = state.task(params.taskId, ctx.client_id)
    task.outcome = type(params.outcome) == 'string' and params.outcome or 'complete'
    task.summary = type(params.summary) == 'string' and params.summary or ''
    if not state.is_finished_state(task.state) then
      task.state = task.outcome
    end
    task.countdown = nil
    state.touch(task)
    prompt().withdraw_task(task.id, 'approval')
    output().finished(task)
    local level = task.outcome == 'complete' and vim.log.levels.INFO or vim.log.levels.WARN
    local summary = vim.split(task.summary, '\n', { plain = true })[1] or ''
    vim.notify(('rawko: task %s: %s'):format(task.outcome, summary), level)
    ui().redraw()
  end)
end

local option_labels = {
  allow_once = 'Allow once',
  allow_always = 'Always allow',
  reject_once = 'Deny',
  reject_always = 'Always deny',
}

--- Pretty-prints a JSON value, keys sorted, two spaces per level.
---@param value any
---@param indent? string
---@return string
function M.json(value, indent)
  indent = indent or ''
  local inner = indent .. '  '
  if type(value) == 'table' and value ~= vim.NIL then
    if vim.tbl_isempty(value) then
      return '{}'
    end
    local parts = {}
    if vim.islist(value) then
      for _, item in ipairs(value) do
        table.insert(parts, inner .. M.json(item, inner))
      end
      return '[\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. ']'
    end
    local keys = vim.tbl_keys(value)
    table.sort(keys, function(a, b)
      return tostring(a) < tostring(b)
    end)
    for _, key in ipairs(keys) do
      table.insert(
        parts,
        ('%s%s: %s'):format(inner, vim.json.encode(tostring(key)), M.json(value[key], inner))
      )
    end
    return '{\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. '}'
  end
  local ok, encoded = pcall(vim.json.encode, value)
  return ok and encoded or tostring(value)
end

--- Lines `label value`, the value's later lines indented under its first.
---@param lines string[]
---@param highlights table[]
---@param label string
---@param value string
local function field(lines, highlights, label, value)
  local pad = label .. string.rep(' ', math.max(1, 8 - #label))
  local pieces = vim.split(value, '\n', { plain = true })
  for i, piece in ipairs(pieces) do
    if i == 1 then
      table.insert(
        highlights,
        { line = #lines, col = 0, end_col = #label, group = 'RawkoPromptLabel' }
      )
      table.insert(lines, pad .. piece)
    else
      table.insert(lines, string.rep(' ', #pad) .. piece)
    end
  end
end

--- The approval window's lines and highlights for `rawko/approveToolCall` params.
---@param params table
---@return string[] lines, table[] highlights
function M.approval_lines(params)
  local config = require('rawko.config').get()
  local lines, highlights = {}, {}
  field(lines, highlights, 'Tool', tostring(params.tool or '?'))
  field(lines, highlights, 'Phase', tostring(params.phase or '?'))
  local task = state.tasks[params.taskId]
  if task and task.description then
    field(lines, highlights, 'Task', task.description)
  end
  field(lines, highlights, 'Reason', tostring(params.reason or ''))
  table.insert(highlights, { line = #lines, col = 0, end_col = 5, group = 'RawkoPromptLabel' })
  table.insert(lines, 'Input')
  local input = vim.split(M.json(params.input), '\n', { plain = true })
  local max = config.approval.max_input_lines
  for i, line in ipairs(input) do
    if i > max then
      table.insert(lines, ('  … %d more lines'):format(#input - max))
      break
    end
    table.insert(lines, '  ' .. line)
  end
  return lines, highlights
end

--- `rawko/approveToolCall`: a tool call the phase does not allow waits for the user's answer.
function M.approve_tool_call(_, params, ctx)
  if type(params) ~= 'table' then
    return nil, vim.lsp.rpc_response_error(-32602, 'approveToolCall without params')
  end
  local options = type(params.options) == 'table' and params.options
    or { 'allow_once', 'allow_always', 'reject_once', 'reject_always' }
  local items = {}
  for _, option in ipairs(options) do
    table.insert(items, { label = option_labels[option] or option, value = option })
  end
  if type(params.taskId) == 'string' then
    state.task(params.taskId, ctx.client_id)
  end
  local lines, highlights = M.approval_lines(params)
  local tool = tostring(params.tool or 'the tool')
  local answer = prompt().ask({
    kind = 'approval',
    title = ('rawko: allow %s?'):format(tool),
    lines = lines,
    highlights = highlights,
    question = ('rawko: %s is blocked in phase %s. Allow it?'):format(
      tool,
      tostring(params.phase or '?')
    ),
    items = items,
    request_id = require('rawko.transport').request_id(params),
    task_id = params.taskId,
    client_id = ctx.client_id,
  })
  if answer == prompt().WITHDRAWN then
    return nil, vim.lsp.rpc_response_error(request_cancelled, 'the approval was withdrawn')
  end
  return { outcome = answer or 'cancelled' }
end

--- `rawko/trustWorkspace`: the workspace has hooks (commands rawko would run); may it run them?
function M.trust_workspace(_, params, ctx)
  if type(params) ~= 'table' then
    return nil, vim.lsp.rpc_response_error(-32602, 'trustWorkspace without params')
  end
  local lines, highlights = {}, {}
  field(lines, highlights, 'Workspace', tostring(params.workspace or '?'))
  if params.changed then
    table.insert(lines, '')
    table.insert(lines, 'The hooks changed since this workspace was last trusted.')
  end
  table.insert(lines, '')
  table.insert(lines, 'rawko would run these hooks:')
  local hooks = type(params.hooks) == 'table' and params.hooks or {}
  for _, hook in ipairs(hooks) do
    table.insert(lines, '  ' .. tostring(hook))
  end
  if #hooks == 0 then
    table.insert(lines, '  (none listed)')
  end
  local answer = prompt().ask({
    kind = 'trust',
    title = params.changed and 'rawko: the hooks changed; trust them?'
      or 'rawko: trust this workspace?',
    lines = lines,
    highlights = highlights,
    question = ('rawko: run the hooks of %s?'):format(
      vim.fn.fnamemodify(tostring(params.workspace or '?'), ':~')
    ),
    items = {
      { label = 'Trust and run hooks', value = true },
      { label = "Don't trust", value = false },
    },
    request_id = require('rawko.transport').request_id(params),
    client_id = ctx and ctx.client_id,
  })
  if answer == prompt().WITHDRAWN then
    return nil, vim.lsp.rpc_response_error(request_cancelled, 'the question was withdrawn')
  end
  return { trusted = answer == true }
end

--- `$/cancelRequest`: rawko withdraws a request it sent (an approval that timed out).
function M.cancel_request(_, params)
  if type(params) == 'table' and params.id ~= nil then
    prompt().withdraw(params.id)
  end
end

--- The LSP config's `handlers` table.
M.table = {
  ['rawko/status'] = M.status,
  ['rawko/countdown'] = M.countdown,
  ['rawko/output'] = M.output,
  ['rawko/taskFinished'] = M.task_finished,
  ['rawko/approveToolCall'] = M.approve_tool_call,
  ['rawko/trustWorkspace'] = M.trust_workspace,
  ['$/cancelRequest'] = M.cancel_request,
}

return M
