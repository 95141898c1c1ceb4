--- Finding or starting the LSP client that talks to `rawko serve` for the current workspace, and
--- sending it requests.

local M = {}

M.name = 'rawko'

--- The resolved `vim.lsp.config.rawko`: `lsp/rawko.lua` with the user's overrides.
---@return vim.lsp.Config?
function M.lsp_config()
  local ok, config = pcall(function()
    return vim.lsp.config[M.name]
  end)
  return ok and config or nil
end

--- The workspace of buffer `bufnr`: the nearest directory upwards with a root marker of
--- `lsp/rawko.lua`, else the current directory.
---@param bufnr? integer
---@return string
function M.workspace(bufnr)
  local markers = (M.lsp_config() or {}).root_markers or {}
  return vim.fs.normalize(vim.fs.root(bufnr or 0, markers) or vim.fn.getcwd())
end

--- The running rawko clients (all, or those `filter` picks, as for vim.lsp.get_clients).
---@param filter? vim.lsp.get_clients.Filter
---@return vim.lsp.Client[]
function M.all(filter)
  filter = vim.tbl_extend('force', { name = M.name, _uninitialized = true }, filter or {})
  return vim.tbl_filter(function(client)
    return not client:is_stopped()
  end, vim.lsp.get_clients(filter))
end

--- The rawko client to use for buffer `bufnr`: one attached to it, else one for its workspace,
--- else the only one running.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.find(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root, all = M.workspace(bufnr), M.all()
  return M.all({ bufnr = bufnr })[1]
    or vim.iter(all):find(function(client)
      return client.root_dir ~= nil and vim.fs.normalize(client.root_dir) == root
    end)
    or (#all == 1 and all[1] or nil)
end

--- The client with id `id`, when it still runs.
---@param id? integer
---@return vim.lsp.Client?
function M.by_id(id)
  return id and M.all({ id = id })[1] or nil
end

--- Starts rawko for the workspace of buffer `bufnr` (no buffer is attached to it).
---@param bufnr? integer
---@return integer? client_id, string? err
function M.start(bufnr)
  local config = M.lsp_config()
  if not config then
    return nil, 'no LSP configuration named rawko (is editors/nvim on the runtimepath?)'
  end
  local bin = require('rawko.config').get().bin
  if type(config.cmd) == 'function' and vim.fn.executable(bin) == 0 then
    return nil,
      ('%s is not an executable: install rawko or set vim.g.rawko.bin (see :checkhealth rawko)'):format(
        bin
      )
  end
  local root = M.workspace(bufnr)
  config = vim.tbl_extend('force', config, { name = M.name, root_dir = root })
  config.cmd_cwd = config.cmd_cwd or root
  local ok, id = pcall(vim.lsp.start, config, { attach = false, silent = true })
  if not ok then
    return nil, tostring(id)
  end
  if not id then
    return nil, ('cannot start %s serve; :checkhealth rawko says why'):format(bin)
  end
  return id
end

--- How long to wait for rawko to answer `initialize`.
M.init_timeout_ms = 10000

--- Calls `callback(client)` with an initialized rawko client for the current buffer, starting
--- rawko when none runs; `callback(nil, err)` when that fails.
---@param callback fun(client: vim.lsp.Client?, err: string?)
---@param bufnr? integer
function M.with_client(callback, bufnr)
  local client, err = M.find(bufnr), nil
  local id = client and client.id
  if not id then
    id, err = M.start(bufnr)
  end
  if not id then
    return callback(nil, err)
  end
  local waited = 0
  local function poll()
    local c = vim.lsp.get_client_by_id(id)
    if not c or c:is_stopped() then
      callback(
        nil,
        'rawko stopped before it was ready; :checkhealth rawko and '
          .. vim.fn.fnamemodify(vim.lsp.log.get_filename(), ':~')
          .. ' say why'
      )
    elseif c.initialized then
      callback(c)
    elseif waited >= M.init_timeout_ms then
      callback(nil, 'rawko did not answer initialize in time')
    else
      waited = waited + 20
      vim.defer_fn(poll, 20)
    end
  end
  poll()
end

--- Shows a failed request's error (rawko's messages are short, lower-case lines).
---@param method string
---@param err table|string
function M.report(method, err)
  local message = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
  vim.notify(('rawko: %s: %s'):format(method:gsub('^rawko/', ''), message), vim.log.levels.ERROR)
end

--- Sends `method` to rawko (started when needed) or to `opts.client`. `on_result(result, client)`
--- runs on success; failures are shown.
---@param method string
---@param params table
---@param on_result? fun(result: any, client: vim.lsp.Client)
---@param opts? {client?: vim.lsp.Client}
function M.request(method, params, on_result, opts)
  local function send(client, err)
    if not client then
      return M.report(method, err or 'rawko is not running')
    end
    local sent = client:request(method, params, function(request_err, result)
      if request_err then
        M.report(method, request_err)
      elseif on_result then
        on_result(result, client)
      end
    end)
    if not sent then
      M.report(method, 'rawko is not running')
    end
  end
  if opts and opts.client then
    send(opts.client)
  else
    M.with_client(send)
  end
end

return M
