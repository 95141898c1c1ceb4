--- The LSP configuration of rawko for Neovim ≥ 0.11's `vim.lsp.config` / `vim.lsp.enable`:
---
--- ```lua
--- vim.lsp.enable('rawko')                                  -- start it in every project
--- vim.lsp.config('rawko', { init_options = { approvalTimeoutSeconds = 60 } })
--- ```
---
--- `:Rawko start` starts rawko on its own when it does not run, so enabling is optional. rawko's
--- settings come from `vim.g.rawko.settings` (or `setup{ settings = … }`), overridden by
--- `init_options`.

local function lazy(name)
  return function(...)
    return require('rawko.handlers')[name](...)
  end
end

---@type vim.lsp.Config
return {
  cmd = function(dispatchers, config)
    local bin = require('rawko.config').get().bin
    return vim.lsp.rpc.start({ bin, 'serve' }, dispatchers, {
      cwd = config.cmd_cwd or config.root_dir,
      env = config.cmd_env,
      detached = config.detached,
    })
  end,
  root_markers = { '.rawko', '.pi', '.git' },
  workspace_required = true,
  init_options = {},
  before_init = function(params, config)
    local settings = require('rawko.config').get().settings
    params.initializationOptions =
      vim.tbl_deep_extend('force', vim.deepcopy(settings), config.init_options or {})
    if vim.tbl_isempty(params.initializationOptions) then
      params.initializationOptions = vim.empty_dict()
    end
  end,
  on_exit = function(_, _, client_id)
    vim.schedule(function()
      require('rawko.state').client_stopped(client_id)
      require('rawko.prompt').withdraw_all(client_id)
      require('rawko').redraw()
    end)
  end,
  handlers = {
    ['rawko/status'] = lazy('status'),
    ['rawko/countdown'] = lazy('countdown'),
    ['rawko/output'] = lazy('output'),
    ['rawko/taskFinished'] = lazy('task_finished'),
    ['rawko/approveToolCall'] = lazy('approve_tool_call'),
    ['rawko/trustWorkspace'] = lazy('trust_workspace'),
    ['rawko/approvalWithdrawn'] = lazy('approval_withdrawn'),
    ['rawko/trustWithdrawn'] = lazy('trust_withdrawn'),
  },
}
