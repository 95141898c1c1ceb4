--- The stdio transport between Neovim's LSP client and `rawko serve`.
---
--- It does what `vim.lsp.rpc.start()` does — LSP framing over a child process's stdin and
--- stdout — and one thing more: it remembers the JSON-RPC id of every request rawko sends to the
--- editor. rawko withdraws an approval prompt that timed out with `$/cancelRequest {id}`, and
--- Neovim's own transport hands a request handler its params only, so without the id the plugin
--- could not tell which prompt to close. `lsp/rawko.lua` uses this module as its `cmd`; a user
--- who sets a plain `cmd` list still gets a working plugin, which then closes prompts from the
--- task's `rawko/status` instead.
---
--- The server's stderr (its log) is appended to `stdpath('log')/rawko.log`.

local M = {}

--- Request params table → the id of the request that carried it (weak keys: a finished
--- request's params are collected with the table).
---@type table<table, integer|string>
local request_ids = setmetatable({}, { __mode = 'k' })

--- The JSON-RPC id of the server → client request whose params are `params`, when this
--- transport received it.
---@param params any
---@return integer|string|nil
function M.request_id(params)
  if type(params) ~= 'table' then
    return nil
  end
  return request_ids[params]
end

--- Where the server's stderr goes.
---@return string
function M.log_path()
  return vim.fs.joinpath(vim.fn.stdpath('log'), 'rawko.log')
end

local client_errors = vim.lsp.rpc.client_errors

--- How long a terminated server gets to exit before it is killed.
M.kill_grace_ms = 3000

--- How large the log may grow before the next server starts a new one.
M.max_log_bytes = 5 * 1024 * 1024

--- Splits LSP frames out of a byte stream.
---@param on_body fun(body: string)
---@param on_bad fun(message: string)
---@return fun(chunk: string)
function M.frame_reader(on_body, on_bad)
  local buffer = ''
  return function(chunk)
    buffer = buffer .. chunk
    while true do
      local header_end = buffer:find('\r\n\r\n', 1, true)
      if not header_end then
        return
      end
      local headers = buffer:sub(1, header_end - 1)
      local length
      for line in vim.gsplit(headers, '\r\n', { plain = true }) do
        local name, value = line:match('^%s*([^:]+)%s*:%s*(.-)%s*$')
        if name and name:lower() == 'content-length' then
          length = tonumber(value)
        end
      end
      if not length then
        on_bad('a frame without Content-Length: ' .. headers)
        buffer = buffer:sub(header_end + 4)
      else
        local body_start = header_end + 4
        if #buffer < body_start + length - 1 then
          return
        end
        local body = buffer:sub(body_start, body_start + length - 1)
        buffer = buffer:sub(body_start + length)
        on_body(body)
      end
    end
  end
end

---@param message table
---@return string
local function frame(message)
  local body = vim.json.encode(message)
  return ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
end

--- Starts `cmd` and returns the RPC client Neovim's LSP client talks through (the shape of
--- `vim.lsp.rpc.PublicClient`).
---@param cmd string[]
---@param dispatchers vim.lsp.rpc.Dispatchers
---@param opts? {cwd?: string, env?: table<string, string>, detached?: boolean}
---@return vim.lsp.rpc.PublicClient
function M.start(cmd, dispatchers, opts)
  opts = opts or {}
  local next_id = 0
  ---@type table<integer, fun(err: table?, result: any)>
  local callbacks = {}
  ---@type table<integer, fun(id: integer)>
  local reply_callbacks = {}
  local closing = false
  local sysobj ---@type vim.SystemObj?
  local stderr_tail = {} ---@type string[]
  local log_path = M.log_path()
  local stat = vim.uv.fs_stat(log_path)
  if stat and stat.size > M.max_log_bytes then
    -- Keep one older log; the next one starts empty.
    vim.uv.fs_rename(log_path, log_path .. '.old')
  end
  local log_file = io.open(log_path, 'a')

  local function send(message)
    if closing or not sysobj or sysobj:is_closing() then
      return false
    end
    local ok = pcall(sysobj.write, sysobj, frame(message))
    return ok
  end

  local function on_error(code, err)
    vim.schedule(function()
      pcall(dispatchers.on_error, code, err)
    end)
  end

  ---@param id integer|string
  ---@param method string
  ---@param params any
  local function handle_request(id, method, params)
    coroutine.wrap(function()
      if type(params) == 'table' then
        request_ids[params] = id
      end
      local ok, result, err = pcall(dispatchers.server_request, method, params)
      local response = { jsonrpc = '2.0', id = id }
      if not ok then
        response.error = { code = -32603, message = tostring(result) }
      elseif err then
        response.error = { code = err.code or -32603, message = err.message or 'error' }
      elseif result == nil then
        response.error = { code = -32603, message = 'no answer to ' .. method }
      else
        response.result = result
      end
      send(response)
    end)()
  end

  ---@param body string
  local function on_body(body)
    local ok, decoded = pcall(vim.json.decode, body, { luanil = { object = true } })
    if not ok or type(decoded) ~= 'table' then
      on_error(client_errors.INVALID_SERVER_JSON, decoded)
      return
    end
    if type(decoded.method) == 'string' and decoded.id ~= nil then
      vim.schedule(function()
        handle_request(decoded.id, decoded.method, decoded.params)
      end)
    elseif type(decoded.method) == 'string' then
      vim.schedule(function()
        local fine, err = pcall(dispatchers.notification, decoded.method, decoded.params)
        if not fine then
          pcall(dispatchers.on_error, client_errors.NOTIFICATION_HANDLER_ERROR, err)
        end
      end)
    elseif decoded.id ~= nil then
      local id = tonumber(decoded.id)
      local callback = id and callbacks[id]
      local reply = id and reply_callbacks[id]
      if id then
        callbacks[id] = nil
        reply_callbacks[id] = nil
      end
      vim.schedule(function()
        if reply then
          pcall(reply, id)
        end
        if callback then
          local err = decoded.error
          if err then
            setmetatable(err, { __tostring = vim.lsp.rpc.format_rpc_error })
          end
          local fine, cb_err = pcall(callback, err, decoded.result)
          if not fine then
            pcall(dispatchers.on_error, client_errors.SERVER_RESULT_CALLBACK_ERROR, cb_err)
          end
        end
      end)
    else
      on_error(client_errors.INVALID_SERVER_MESSAGE, decoded)
    end
  end

  local read = M.frame_reader(on_body, function(message)
    on_error(client_errors.INVALID_SERVER_MESSAGE, message)
  end)

  local spawned, result = pcall(vim.system, cmd, {
    stdin = true,
    cwd = opts.cwd,
    env = opts.env,
    detach = opts.detached ~= false,
    stdout = function(err, chunk)
      if err then
        on_error(client_errors.READ_ERROR, err)
      elseif chunk then
        read(chunk)
      end
    end,
    stderr = function(_, chunk)
      if not chunk then
        return
      end
      if log_file then
        log_file:write(chunk)
        log_file:flush()
      end
      for line in vim.gsplit(chunk, '\n', { plain = true, trimempty = true }) do
        table.insert(stderr_tail, line)
        if #stderr_tail > 50 then
          table.remove(stderr_tail, 1)
        end
      end
    end,
  }, function(obj)
    closing = true
    if log_file then
      log_file:close()
      log_file = nil
    end
    dispatchers.on_exit(obj.code, obj.signal)
  end)
  if not spawned then
    if log_file then
      log_file:close()
    end
    local why = tostring(result)
    if why:match('ENOENT') then
      why = ('%s was not found; install rawko or set vim.g.rawko.bin'):format(cmd[1])
    end
    error(('rawko: cannot start `%s`: %s'):format(table.concat(cmd, ' '), why), 0)
  end
  sysobj = result

  ---@type vim.lsp.rpc.PublicClient
  local public = {
    request = function(method, params, callback, notify_reply_callback)
      next_id = next_id + 1
      local id = next_id
      if not send({ jsonrpc = '2.0', id = id, method = method, params = params }) then
        return false
      end
      callbacks[id] = callback
      reply_callbacks[id] = notify_reply_callback
      return true, id
    end,
    notify = function(method, params)
      return send({ jsonrpc = '2.0', method = method, params = params })
    end,
    is_closing = function()
      return closing or sysobj == nil or sysobj:is_closing()
    end,
    terminate = function()
      if sysobj and not sysobj:is_closing() then
        closing = true
        -- rawko ends on SIGTERM only once its stdin is closed too (it reads stdin on a blocking
        -- thread when stdin is a socket, as libuv makes it), so close stdin first, and kill it
        -- for good if it is still there after a grace.
        pcall(sysobj.write, sysobj, nil)
        sysobj:kill(15)
        local process = sysobj
        vim.defer_fn(function()
          if not process:is_closing() then
            pcall(process.kill, process, 9)
          end
        end, M.kill_grace_ms)
      end
    end,
  }
  --- The last lines the server wrote to stderr.
  ---@return string[]
  public.stderr_tail = function()
    return vim.deepcopy(stderr_tail)
  end
  return public
end

return M
