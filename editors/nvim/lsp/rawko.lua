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
    local rawko_config = require('rawko.config')
    local options = rawko_config.get()
    -- `rawko serve`, with `--web ADDR` when the `web` option asks for the page and `--nats URLS`
    -- when `team.nats` names the team's NATS server(s).
    local cmd = vim.list_extend({ options.bin }, rawko_config.serve_args(options))
    return vim.lsp.rpc.start(cmd, dispatchers, {
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
    -- rawko's offer to open the web page: asked like the approvals (one question at a time, in
    -- the plugin's window, with a way to dismiss it, withdrawn when rawko stops) instead of
    -- Neovim's own, which asks from inside the request and, with the default vim.ui.select,
    -- blocks the editor in inputlist(). `window/showDocument` (the Open) is Neovim's own:
    -- `external` opens the page with vim.ui.open.
    ['window/showMessageRequest'] = lazy('show_message_request'),
  },
}
