-- `rawko acp` driven by CodeCompanion.nvim, a client no one here wrote, in headless Neovim: the
-- adapter docs/acp.md gives, a chat in which the user asks for a task, and rawko running it
-- through a two-phase workflow chosen by its name in the adapter's `session_config_options` (so
-- CodeCompanion must find the workflows among the session's config options, as it reads only
-- those). Checks what CodeCompanion shows: the workflows, the chosen one current while the task
-- runs and "No workflow" after it, the chat's title from `session_info_update`, the tokens from
-- `usage_update`, the streamed text; and the file the task wrote through CodeCompanion's
-- `fs/write_text_file`.
--
-- Run by scripts/test-codecompanion.sh, which sets RAWKO_BIN, RAWKO_CODECOMPANION (a checkout of
-- CodeCompanion.nvim), RAWKO_PLENARY (plenary.nvim, which it needs) and fresh XDG directories.
-- The last line is `N passed, N failed`.

local bin = assert(os.getenv('RAWKO_BIN'), 'RAWKO_BIN must name the rawko binary')
local cc = assert(os.getenv('RAWKO_CODECOMPANION'), 'RAWKO_CODECOMPANION must name a checkout')
local plenary = assert(os.getenv('RAWKO_PLENARY'), 'RAWKO_PLENARY must name plenary.nvim')
vim.opt.rtp:append(cc)
vim.opt.rtp:append(plenary)

local LIMIT_MS = 30000

local function write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

local function read(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local text = f:read('*a')
  f:close()
  return text
end

-- The workspace: a workflow whose first phase only reads, and the scripted "model".
local ws = vim.fn.resolve(vim.fn.tempname() .. '-project')
write(
  ws .. '/.rawko/workflows/feature/workflow.yaml',
  'name: Feature\ncommandName: feature\ninitialMessage: "Implement: {description}"\nphases:\n  - plan.md\n  - build.md\n'
)
write(
  ws .. '/.rawko/workflows/feature/plan.md',
  '---\nid: plan\nname: Plan\nemoji: "📋"\ntools:\n  whitelist: [Read, Glob, Grep]\n---\nRead only.\n'
)
write(
  ws .. '/.rawko/workflows/feature/build.md',
  '---\nid: build\nname: Build\nemoji: "🔨"\n---\nWrite it.\n'
)
write(ws .. '/.rawko/config.json', '{"countdownSeconds": 1}\n')
write(
  ws .. '/.rawko/script.yaml',
  table.concat({
    'turns:',
    '  - text: "Reading first."',
    '    usage: {input_tokens: 1200, output_tokens: 80, context_window: 200000}',
    '    tool_calls:',
    '      - {name: Read, input: {path: README.md}}',
    '  - tool_calls:',
    '      - {name: workflow_step, input: {action: next}}',
    '  - tool_calls:',
    '      - {name: Write, input: {path: out.txt, content: "built\\n"}}',
    '  - tool_calls:',
    '      - {name: workflow_step, input: {action: next}}',
    '  - text: "All done."',
    '',
  }, '\n')
)
write(ws .. '/README.md', 'A tiny project.\n')
-- The provider is the user's setting (a workspace's needs trust).
write(
  vim.env.XDG_CONFIG_HOME .. '/rawko/config.json',
  vim.json.encode({ providers = { { name = 'scripted', script = '.rawko/script.yaml' } } })
)
vim.cmd.cd(ws)

-- The adapter exactly as docs/acp.md gives it, with the workflow chosen by its name.
require('codecompanion').setup({
  adapters = {
    acp = {
      rawko = function()
        return {
          name = 'rawko',
          formatted_name = 'rawko',
          type = 'acp',
          roles = { llm = 'assistant', user = 'user' },
          commands = { default = { bin, 'acp' } },
          defaults = {
            mcpServers = {},
            timeout = 20000,
            session_config_options = { mode = 'Feature' },
          },
          parameters = {
            protocolVersion = 1,
            clientCapabilities = { fs = { readTextFile = true, writeTextFile = true } },
            clientInfo = { name = 'CodeCompanion.nvim', version = '1.0.0' },
          },
          handlers = {
            setup = function()
              return true
            end,
            form_messages = function(self, messages, capabilities)
              return require('codecompanion.adapters.acp.helpers').form_messages(
                self,
                messages,
                capabilities
              )
            end,
            on_exit = function() end,
          },
        }
      end,
    },
  },
  interactions = { chat = { adapter = 'rawko' } },
  opts = { log_level = 'ERROR' },
})

local failures = {}
local function check(ok, what)
  if not ok then
    table.insert(failures, what)
    io.stderr:write('FAIL ' .. what .. '\n')
  end
end

local done = false
vim.api.nvim_create_autocmd('User', {
  pattern = 'CodeCompanionChatDone',
  callback = function()
    done = true
  end,
})

local chat = require('codecompanion').chat()
chat:add_buf_message({ role = 'user', content = 'Build the thing' })
chat:submit()

-- What CodeCompanion shows of the session's options while the task runs.
local modes_seen = {}
local workflow_option
local finished = vim.wait(LIMIT_MS, function()
  local conn = chat.acp_connection
  if conn then
    for _, opt in ipairs(conn:get_config_options()) do
      if opt.category == 'mode' then
        workflow_option = opt
        if modes_seen[#modes_seen] ~= opt.currentValue then
          table.insert(modes_seen, opt.currentValue)
        end
      end
    end
  end
  return done
end, 20)
check(finished, 'the chat finished within ' .. LIMIT_MS .. ' ms')

local names = {}
for _, o in ipairs(workflow_option and workflow_option.options or {}) do
  table.insert(names, o.name)
end
check(
  workflow_option ~= nil and workflow_option.type == 'select' and vim.tbl_contains(names, 'Feature'),
  'the workflows are a select option of category mode (' .. vim.inspect(names) .. ')'
)
check(
  vim.tbl_contains(modes_seen, 'feature'),
  'the Feature workflow was current (' .. vim.inspect(modes_seen) .. ')'
)
check(
  modes_seen[#modes_seen] == 'none',
  'the workflow ended: back to none (' .. vim.inspect(modes_seen) .. ')'
)

local meta = _G.codecompanion_chat_metadata and _G.codecompanion_chat_metadata[chat.bufnr] or {}
check(chat.tokens == 1280, 'usage_update: tokens ' .. tostring(chat.tokens))
check(
  chat.title == 'Build the thing',
  "session_info_update: the chat's title " .. tostring(chat.title)
)
check(
  meta.config_options and meta.config_options.mode ~= nil,
  "the chat's metadata shows the workflow option"
)

local text = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), '\n')
check(
  text:find('Reading first.', 1, true) and text:find('All done.', 1, true),
  'the streamed text:\n' .. text
)
check(
  read(ws .. '/out.txt') == 'built\n',
  "out.txt written through CodeCompanion's fs/write_text_file"
)

if #failures == 0 then
  print('ok   CodeCompanion runs a rawko task and shows its workflows')
  print('1 passed, 0 failed')
else
  print('FAIL CodeCompanion runs a rawko task and shows its workflows')
  print('0 passed, 1 failed')
end
vim.cmd(#failures == 0 and 'qall!' or 'cquit!')
