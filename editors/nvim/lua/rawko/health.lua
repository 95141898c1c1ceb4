--- `:checkhealth rawko`: Neovim's version, the configuration, the rawko binary and its version,
--- the LSP configuration, and the rawko servers running now.

local M = {}

--- The oldest rawko this plugin speaks to.
M.min_version = '0.1.0'
--- The protocol version (`capabilities.experimental.rawko.protocol`) this plugin speaks.
M.protocol = 1

local health = vim.health

--- Runs `bin --version`; returns the version, or nil and why not.
---@param bin string
---@return string? version, string? err
function M.version(bin)
  local ok, obj = pcall(function()
    return vim.system({ bin, '--version' }, { text = true }):wait(5000)
  end)
  if not ok then
    return nil, tostring(obj)
  end
  if obj.code ~= 0 then
    local why = vim.trim(obj.stderr or '')
    return nil,
      ('`%s --version` exited with %d%s'):format(bin, obj.code, why ~= '' and (': ' .. why) or '')
  end
  local version = (obj.stdout or ''):match('rawko%s+(%d+%.%d+%.%d+[%w%.%-+]*)')
  if not version then
    return nil,
      ('`%s --version` said %q, not "rawko X.Y.Z"'):format(bin, vim.trim(obj.stdout or ''))
  end
  return version
end

function M.check()
  health.start('rawko: Neovim')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok(('Neovim %s'):format(tostring(vim.version())))
  else
    health.error('rawko needs Neovim 0.11 or later', { 'Update Neovim.' })
  end

  health.start('rawko: configuration')
  local config, problems = require('rawko.config').resolve()
  if #problems == 0 then
    health.ok('the configuration (vim.g.rawko and setup()) is valid')
  else
    for _, problem in ipairs(problems) do
      health.error(problem)
    end
    health.info('rawko uses the defaults of these options until they are fixed')
  end

  health.start('rawko: binary')
  local bin = config.bin
  local path = vim.fn.exepath(bin)
  if path == '' then
    health.error(('`%s` is not an executable on $PATH'):format(bin), {
      'Install rawko (cargo install --path server in the rawko repository)',
      'or set vim.g.rawko.bin to the path of the rawko binary.',
    })
  else
    health.ok(('found %s'):format(path))
    local version, err = M.version(path)
    if not version then
      health.error(('cannot tell the version of rawko: %s'):format(err))
    else
      local parsed = vim.version.parse(version)
      if parsed and vim.version.lt(parsed, M.min_version) then
        health.error(
          ('rawko %s is older than %s, the oldest this plugin speaks to'):format(
            version,
            M.min_version
          ),
          { 'Update rawko.' }
        )
      else
        health.ok(('rawko %s'):format(version))
      end
    end
  end

  health.start('rawko: LSP configuration')
  local lsp_config = require('rawko.client').lsp_config()
  if not lsp_config then
    health.error('vim.lsp.config.rawko is missing: is the plugin on the runtimepath?')
  else
    health.ok('vim.lsp.config.rawko found (lsp/rawko.lua)')
    health.info(
      ("vim.lsp.enable('rawko') is %s"):format(
        vim.lsp.is_enabled('rawko') and 'on' or 'off (:Rawko start starts rawko when needed)'
      )
    )
  end

  health.start('rawko: servers')
  local clients = require('rawko.client').all()
  if #clients == 0 then
    health.info('no rawko server runs now')
  end
  for _, client in ipairs(clients) do
    local info = client.server_info or {}
    local protocol = vim.tbl_get(client, 'server_capabilities', 'experimental', 'rawko', 'protocol')
    local line = ('client %d: rawko %s for %s'):format(
      client.id,
      info.version or '?',
      client.root_dir or '?'
    )
    if protocol ~= nil and protocol ~= M.protocol then
      health.warn(
        ('%s speaks protocol %s; this plugin speaks %d'):format(line, protocol, M.protocol)
      )
    else
      health.ok(line)
    end
  end
  health.info(("the servers' log (their stderr): %s"):format(vim.lsp.log.get_filename()))
end

return M
