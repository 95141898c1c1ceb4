--- An external agent's session (Claude Code through `rawko hook`) begun without a workflow: the
--- plugin says once that it runs none, and `:Rawko workflow` starts one in it (rawko/setWorkflow).

local t = require('helpers')

--- Starts rawko for `ws` and waits until it wrote its endpoint file for external agents.
---@param ws test.Workspace
local function serve(ws)
  t.use(ws)
  vim.cmd('Rawko validate') -- starts rawko for the workspace
  t.wait('rawko to start', function()
    local c = t.clients()[1]
    return c and c.initialized
  end)
  local dir = t.server_env(ws).XDG_RUNTIME_DIR .. '/rawko'
  t.wait('the endpoint file in ' .. dir, function()
    return #vim.fn.glob(dir .. '/endpoint-*.json', false, true) > 0
  end)
end

--- Runs `rawko hook EVENT` as Claude Code would, in the server's environment; returns its
--- exit code, stdout and stderr.
---@param ws test.Workspace
---@param event string
---@param input table
---@return vim.SystemCompleted
local function hook(ws, event, input)
  input =
    vim.tbl_extend('keep', input, { session_id = 's1', cwd = ws.dir, hook_event_name = event })
  local done
  vim.system({ t.bin, 'hook', event }, {
    cwd = ws.dir,
    env = t.server_env(ws),
    stdin = vim.json.encode(input),
    text = true,
  }, function(obj)
    done = obj
  end)
  t.wait('rawko hook ' .. event, function()
    return done ~= nil
  end)
  return done
end

--- The external task the plugin knows of.
---@return rawko.Task?
local function external()
  for _, task in pairs(require('rawko.state').tasks) do
    if task.external then
      return task
    end
  end
  return nil
end

--- The external tasks the plugin knows of, by id.
---@return string[]
local function external_ids()
  local ids = {}
  for id, task in pairs(require('rawko.state').tasks) do
    if task.external then
      table.insert(ids, id)
    end
  end
  table.sort(ids)
  return ids
end

local function count_notes(needle)
  local n = 0
  for _, note in ipairs(t.notes) do
    if note.message:find(needle, 1, true) then
      n = n + 1
    end
  end
  return n
end

---@param ws test.Workspace
---@param session? string
local function prompt(ws, session)
  local obj = hook(ws, 'UserPromptSubmit', { prompt = 'hi', session_id = session })
  t.eq(obj.code, 0, 'rawko hook exits 0: ' .. tostring(obj.stderr))
end

t.test(':Rawko workflow KEY starts a workflow in an external session that runs none', function()
  local ws = t.workspace()
  serve(ws)
  prompt(ws)
  t.wait('the external session', function()
    return external() ~= nil
  end)
  local id = external().id
  local told = ('rawko: external session %s runs no workflow yet — :Rawko workflow picks one'):format(
    id
  )
  t.wait('the notification', function()
    return t.noted(told)
  end)
  -- Another prompt of the same session: its status comes again, the notification does not.
  prompt(ws)
  vim.wait(200)
  t.eq(count_notes(told), 1, 'told once')

  vim.cmd('Rawko workflow feature')
  t.wait('the Feature workflow in the statusline', function()
    return t.statusline():find('Feature > 📋 Plan [1/4]', 1, true) ~= nil
  end)
  -- rawko answers once the workflow's start is on disk: the answer may come just after the status.
  t.wait('the result is told', function()
    return t.noted('rawko: Started the Feature workflow.')
  end)
  t.eq(require('rawko.state').current().id, id, 'the statusline follows the session')
  t.eq(
    vim.startswith(t.statusline(), 'Claude Code: '),
    true,
    'the statusline names the agent: ' .. t.statusline()
  )

  -- It runs a workflow now: setting one again fails with rawko's message.
  vim.cmd('Rawko workflow feature')
  t.wait('the error', function()
    for _, note in ipairs(t.notes) do
      if vim.startswith(note.message, 'rawko: setWorkflow: ') then
        return note.level == vim.log.levels.ERROR
      end
    end
  end)
end)

t.test(':Rawko workflow without a key asks which workflow; an unknown key is refused', function()
  local ws = t.workspace()
  serve(ws)
  prompt(ws)
  t.wait('the external session', function()
    return external() ~= nil
  end)
  t.ok(
    vim.tbl_contains(vim.fn.getcompletion('Rawko workflow ', 'cmdline'), 'feature'),
    'workflow keys complete'
  )

  vim.cmd('Rawko workflow nope')
  t.wait('the unknown workflow to be refused', function()
    return t.noted('rawko: setWorkflow: unknown workflow "nope"')
  end)

  vim.cmd('Rawko workflow')
  local select = t.wait_select('rawko_workflow')
  t.ok(
    t.find(select.labels, 'feature — Feature'),
    'feature is offered: ' .. vim.inspect(select.labels)
  )
  t.choose(select, 'feature — Feature')
  t.wait('the Feature workflow in the statusline', function()
    return t.statusline():find('Feature > 📋 Plan [1/4]', 1, true) ~= nil
  end)
end)

t.test('with two sessions without a workflow, :Rawko workflow asks which one', function()
  local ws = t.workspace()
  serve(ws)
  prompt(ws, 's1')
  prompt(ws, 's2')
  t.wait('both sessions', function()
    return #external_ids() == 2
  end)
  local ids = external_ids()
  vim.cmd('Rawko workflow feature')
  local select = t.wait_select('rawko_task')
  t.eq(#select.items, 2, 'both sessions are offered')
  t.choose(select, ids[2])
  t.wait('the Feature workflow in the statusline', function()
    return t.statusline():find('Feature > 📋 Plan [1/4]', 1, true) ~= nil
  end)
  t.eq(require('rawko.state').current().id, ids[2], 'the chosen session runs it')
  t.eq(#t.task(ids[1]).breadcrumb, 0, 'the other still runs none')
end)

return t
