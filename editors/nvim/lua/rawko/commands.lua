--- The `:Rawko` command: its subcommands and their completion.

local M = {}

local client = require('rawko.client')
local state = require('rawko.state')

local function notify(message, level)
  vim.notify('rawko: ' .. message, level or vim.log.levels.INFO)
end

--- The task a subcommand acts on: the one named, else the one the statusline follows while it is
--- active. Reports why there is none.
---@param id? string
---@return rawko.Task?
local function target(id)
  if id then
    return state.task(id)
  end
  local task = state.current()
  if task and state.is_active(task) then
    return task
  end
  notify(
    'no task is running; :Rawko start starts one, :Rawko resume resumes one',
    vim.log.levels.WARN
  )
  return nil
end

--- Sends a request about `task` to the server that runs it.
---@param task rawko.Task
---@param method string
---@param params table
---@param on_result? fun(result: any, c: vim.lsp.Client)
local function task_request(task, method, params, on_result)
  params.taskId = task.id
  client.request(method, params, on_result, { client = client.by_id(task.client_id) })
end

--- Asks for a line of text with vim.ui.input; nothing happens when the user gives none.
---@param prompt string
---@param on_text fun(text: string)
local function input(prompt, on_text)
  vim.ui.input({ prompt = prompt }, function(text)
    if text and vim.trim(text) ~= '' then
      on_text(vim.trim(text))
    else
      notify('nothing given; nothing done')
    end
  end)
end

--- The workflows users may start, of a `rawko/listWorkflows` result.
---@param result any
---@return table[]
local function startable(result)
  return vim.tbl_filter(function(w)
    return w.show ~= 'workflows'
  end, type(result) == 'table' and result.workflows or {})
end

--- Calls `on_list(workflows)` with the workflows users may start, from rawko; says so when there
--- are none.
---@param c vim.lsp.Client
---@param on_list fun(workflows: table[])
local function user_workflows(c, on_list)
  client.request('rawko/listWorkflows', vim.empty_dict(), function(result)
    local list = startable(result)
    if #list == 0 then
      notify(
        'no workflows found; `rawko init` writes a starter one into .rawko/workflows',
        vim.log.levels.ERROR
      )
    else
      on_list(list)
    end
  end, { client = c })
end

--- Asks which of `workflows` with vim.ui.select; `on_key(key)` with the chosen one's key. When
--- none is chosen, says that `what` was not started.
---@param workflows table[]
---@param what string
---@param on_key fun(key: string)
local function pick_workflow(workflows, what, on_key)
  vim.ui.select(workflows, {
    prompt = 'rawko: workflow',
    kind = 'rawko_workflow',
    format_item = function(w)
      -- The phases the breadcrumb counts (a subworkflow as one), and the steps when they differ.
      local phases, steps = w.outerPhaseCount or w.phaseCount or 0, w.phaseCount or 0
      local count = ('%d phase%s'):format(phases, phases == 1 and '' or 's')
      if steps ~= phases then
        count = ('%s, %d steps'):format(count, steps)
      end
      return ('%s — %s (%s)'):format(w.key, w.name, count)
    end,
  }, function(choice)
    if choice then
      on_key(choice.key)
    else
      notify('no workflow chosen; ' .. what .. ' started')
    end
  end)
end

--- Makes `task` the one the statusline follows, opens the output window (when configured) and
--- says `message`.
---@param task rawko.Task
---@param message string
local function follow(task, message)
  state.focus(task.id)
  if require('rawko.config').get().output.open_on_start then
    require('rawko.output').open()
  end
  notify(message)
  require('rawko').redraw()
end

--- `:Rawko start [workflow] [description]`
---@param args string[]
function M.start(args)
  local config = require('rawko.config').get()
  client.with_client(function(c, err)
    if not c then
      return client.report('rawko/startTask', err or 'rawko is not running')
    end
    user_workflows(c, function(workflows)
      local workflow, description = nil, nil
      if args[1] then
        for _, w in ipairs(workflows) do
          if w.key == args[1] or (w.commandName ~= '' and w.commandName == args[1]) then
            workflow = w.key
          end
        end
        description = table.concat(args, ' ', workflow and 2 or 1)
        description = description ~= '' and description or nil
      end
      local function start(key, desc)
        local params = vim.tbl_extend('force', config.task, { workflow = key, description = desc })
        client.request('rawko/startTask', params, function(result)
          if type(result) ~= 'table' or type(result.taskId) ~= 'string' then
            notify('rawko/startTask gave no task id', vim.log.levels.ERROR)
            return
          end
          local task = state.task(result.taskId, c.id)
          task.description = desc
          follow(task, ('started %s (%s)'):format(task.id, key))
        end, { client = c })
      end
      local function with_description(desc)
        workflow = workflow or config.task.workflow
        if workflow then
          start(workflow, desc)
        else
          pick_workflow(workflows, 'no task', function(key)
            start(key, desc)
          end)
        end
      end
      if description then
        with_description(description)
      else
        input('rawko: describe the task: ', with_description)
      end
    end)
  end)
end

--- A subcommand that sends `method` about the task named or followed, then `done(result, task)`.
---@param method string
---@param params? table
---@param done fun(result: any, task: rawko.Task)
local function about_task(method, params, done)
  return function(args)
    local task = target(args[1])
    if task then
      task_request(task, method, vim.deepcopy(params or {}), function(result)
        done(result, task)
      end)
    end
  end
end

--- `:Rawko cancel [task]`
M.cancel = about_task('rawko/cancelTask', nil, function(_, task)
  notify(('cancelling %s'):format(task.id))
end)

--- `:Rawko interrupt [task]`
M.interrupt = about_task('rawko/interrupt', nil, function(_, task)
  notify(('interrupted %s; :Rawko message or :Rawko resume goes on'):format(task.id))
end)

---@param action string
local function step(action)
  return about_task('rawko/step', { action = action }, function(result, task)
    local text = type(result) == 'table' and result.text or ''
    require('rawko.output').note(task, text)
    notify(require('rawko.output').first_line(text))
  end)
end

--- `:Rawko next [task]`, `:Rawko loop [task]`, `:Rawko status [task]`
M.next = step('next')
M.loop = step('loop')
M.status = step('status')

--- `:Rawko message [text]`
function M.message(args)
  local task = target(nil)
  if not task then
    return
  end
  local function send(text)
    task_request(task, 'rawko/sendMessage', { text = text })
  end
  if #args > 0 then
    send(table.concat(args, ' '))
  else
    input('rawko: message to the agent: ', send)
  end
end

--- The task `:Rawko workflow` acts on: the running task whose last `rawko/status` said it runs no
--- workflow, or the one picked with vim.ui.select when several do; when none does, the task the
--- statusline shows (rawko then says why it cannot).
---@param on_task fun(task: rawko.Task)
local function task_without_workflow(on_task)
  local candidates = vim.tbl_filter(function(task)
    return state.is_active(task) and not task.workflow
  end, state.list())
  if #candidates <= 1 then
    local task = candidates[1] or target(nil)
    if task then
      on_task(task)
    end
    return
  end
  vim.ui.select(candidates, {
    prompt = 'rawko: start a workflow in which task?',
    kind = 'rawko_task',
    format_item = function(task)
      return ('%s · %s (%s)'):format(state.describe(task), task.state, task.id)
    end,
  }, function(choice)
    if choice then
      on_task(choice)
    else
      notify('no task chosen; no workflow started')
    end
  end)
end

--- `:Rawko workflow [workflow]`: starts a workflow in a task that runs none yet (an external
--- agent's session begun without one).
---@param args string[]
function M.workflow(args)
  task_without_workflow(function(task)
    local c = client.by_id(task.client_id)
    if not c then
      notify(('the server of %s no longer runs'):format(task.id), vim.log.levels.ERROR)
      return
    end
    local function set(key)
      task_request(task, 'rawko/setWorkflow', { workflow = key }, function(result)
        local text = type(result) == 'table' and result.text or ''
        state.focus(task.id)
        require('rawko.output').note(task, text)
        notify(text ~= '' and text or ('started %s in %s'):format(key, task.id))
        require('rawko').redraw()
      end)
    end
    if args[1] then
      set(args[1])
    else
      user_workflows(c, function(workflows)
        pick_workflow(workflows, 'nothing', set)
      end)
    end
  end)
end

--- `:Rawko output`
function M.output()
  require('rawko.output').toggle()
end

--- `:Rawko tasks`: the tasks with their phase trees (see `rawko.tasks`).
function M.tasks()
  require('rawko.tasks').open()
end

--- `:Rawko resume [task]`: resumes the task named (on client `c`, when given), else one picked
--- among those interrupted (or blocked).
---@param args string[]
---@param c? vim.lsp.Client
function M.resume(args, c)
  local function resume(id, description, on)
    client.request('rawko/resumeTask', { taskId = id }, function(_, used)
      -- Its state and breadcrumb come with its rawko/status.
      local task = state.task(id, used.id)
      task.description = task.description or description
      follow(task, ('resumed %s'):format(id))
    end, { client = on })
  end
  if args[1] then
    local known = state.tasks[args[1]]
    return resume(args[1], nil, c or (known and client.by_id(known.client_id)))
  end
  client.request('rawko/listTasks', vim.empty_dict(), function(result, used)
    local list = vim.tbl_filter(function(summary)
      return state.accepts(summary, 'resume')
    end, type(result) == 'table' and result.tasks or {})
    if #list == 0 then
      notify('no interrupted task to resume')
      return
    end
    vim.ui.select(list, {
      prompt = 'rawko: resume which task?',
      kind = 'rawko_task',
      format_item = function(t)
        local where = t.breadcrumbText ~= '' and t.breadcrumbText or (t.workflow or '')
        return ('%s · %s · %s (%s)'):format(t.state, t.description, where, t.taskId)
      end,
    }, function(choice)
      if choice then
        resume(choice.taskId, choice.description, used)
      end
    end)
  end)
end

--- `:Rawko validate`: every problem of every workflow into the quickfix list.
function M.validate()
  client.request('rawko/validateWorkflows', vim.empty_dict(), function(result, c)
    local items = {}
    for _, d in ipairs(type(result) == 'table' and result.diagnostics or {}) do
      local path = d.path or ''
      if not vim.startswith(path, '/') and c.root_dir then
        path = vim.fs.joinpath(c.root_dir, path)
      end
      table.insert(items, {
        filename = path,
        lnum = d.line or 1,
        col = d.column or 1,
        type = d.severity == 'warning' and 'W' or 'E',
        text = (d.workflow and ('[%s] '):format(d.workflow) or '') .. (d.message or ''),
      })
    end
    vim.fn.setqflist({}, ' ', { title = 'rawko: workflows', items = items })
    if #items == 0 then
      notify('every workflow is valid')
    else
      notify(('%d problem%s in the workflows'):format(#items, #items == 1 and '' or 's'))
      vim.cmd('botright copen')
    end
  end)
end

--- Runs `:Rawko {subcommand} {args}`.
---@param opts {fargs: string[]}
function M.run(opts)
  local name = opts.fargs[1]
  if not name then
    notify('usage: :Rawko {' .. table.concat(M.names, '|') .. '}', vim.log.levels.WARN)
    return
  end
  if not vim.tbl_contains(M.names, name) then
    notify(
      ('unknown subcommand %q; one of: %s'):format(name, table.concat(M.names, ', ')),
      vim.log.levels.ERROR
    )
    return
  end
  M[name](vim.list_slice(opts.fargs, 2))
end

--- The workflow keys a running rawko offers (for completion; asks for at most half a second).
---@return string[]
local function workflow_keys()
  local c = client.find()
  if not c then
    return {}
  end
  local answer = c:request_sync('rawko/listWorkflows', vim.empty_dict(), 500)
  return vim.tbl_map(function(w)
    return w.key
  end, startable(answer and answer.result))
end

--- The ids of the tasks for which `keep(task)` holds, the one changed last first.
---@param keep fun(task: rawko.Task): boolean
local function task_ids(keep)
  return function()
    return vim.tbl_map(function(task)
      return task.id
    end, vim.tbl_filter(keep, state.list()))
  end
end
local active_task_ids = task_ids(state.is_active)

--- The subcommands, in the order completion offers them, with what completes their argument.
local subcommands = {
  { 'start', workflow_keys },
  { 'cancel', active_task_ids },
  { 'next', active_task_ids },
  { 'loop', active_task_ids },
  { 'interrupt', active_task_ids },
  { 'message' },
  { 'status', active_task_ids },
  { 'workflow', workflow_keys },
  { 'output' },
  { 'tasks' },
  {
    'resume',
    task_ids(function(task)
      return state.accepts(task, 'resume')
    end),
  },
  { 'validate' },
}
M.names = vim.tbl_map(function(subcommand)
  return subcommand[1]
end, subcommands)

--- Completes `:Rawko`'s arguments.
---@param arglead string
---@param cmdline string
---@param cursorpos integer
---@return string[]
function M.complete(arglead, cmdline, cursorpos)
  local before = cmdline:sub(1, cursorpos)
  local words = vim.split(vim.trim(before), '%s+')
  -- words[1] is the command itself; a trailing space means a new word begins.
  local n = #words - 1
  if before:match('%s$') then
    n = n + 1
  end
  local candidates = {}
  if n <= 1 then
    candidates = M.names
  elseif n == 2 then
    local complete = (subcommands[vim.fn.index(M.names, words[2]) + 1] or {})[2]
    candidates = complete and complete() or {}
  end
  return vim.tbl_filter(function(candidate)
    return vim.startswith(candidate, arglead)
  end, candidates)
end

return M
