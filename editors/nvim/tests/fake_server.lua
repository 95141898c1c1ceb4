--- A stand-in for `rawko serve` that plays a plan, for what the real server does not send on
--- demand: `nvim --headless --clean -l tests/fake_server.lua PLAN.json LOG.jsonl`.
---
--- It speaks LSP framing on stdin/stdout, answers `initialize` like rawko (and `shutdown`), and
--- logs every message it receives to LOG as one JSON line each. After `initialized` it plays the
--- plan's `steps` in order: `{"send": MESSAGE}` sends a message, `{"await": ID}` waits until the
--- editor answered the request with that id, `{"await_request": METHOD}` until the editor sent a
--- request of that method. `requests` maps a method to the result it answers.

local plan_path, log_path = _G.arg[1], _G.arg[2]
local plan = vim.json.decode(table.concat(vim.fn.readfile(plan_path), '\n'))
local log = assert(io.open(log_path, 'a'))

local function send(message)
  local body = vim.json.encode(message)
  io.stdout:write(('Content-Length: %d\r\n\r\n%s'):format(#body, body))
  io.stdout:flush()
end

--- One frame's body, or nil at the end of stdin.
local function read()
  local length
  while true do
    local line = io.stdin:read('*l')
    if not line then
      return nil
    end
    line = line:gsub('\r$', '')
    if line == '' then
      break
    end
    local n = line:match('^[Cc]ontent%-[Ll]ength:%s*(%d+)')
    if n then
      length = tonumber(n)
    end
  end
  return io.stdin:read(length)
end

local answered, asked = {}, {}
local step = 1
local started = false

local function play()
  while started and step <= #(plan.steps or {}) do
    local s = plan.steps[step]
    if s.await ~= nil or s.await_request then
      if not (answered[s.await] or asked[s.await_request]) then
        return
      end
    elseif s.send then
      send(s.send)
    end
    step = step + 1
  end
end

while true do
  local body = read()
  if not body then
    break
  end
  log:write(body, '\n')
  log:flush()
  local message = vim.json.decode(body)
  if message.method == 'initialize' then
    send({
      jsonrpc = '2.0',
      id = message.id,
      result = {
        capabilities = { experimental = { rawko = { protocol = 1 } } },
        serverInfo = { name = 'rawko', version = '0.1.0' },
      },
    })
  elseif message.method == 'initialized' then
    started = true
  elseif message.method == 'shutdown' then
    send({ jsonrpc = '2.0', id = message.id, result = vim.NIL })
  elseif message.method == 'exit' then
    break
  elseif message.method and message.id ~= nil then
    asked[message.method] = true
    local result = (plan.requests or {})[message.method]
    send({ jsonrpc = '2.0', id = message.id, result = result or vim.empty_dict() })
  elseif message.method == nil and message.id ~= nil then
    answered[message.id] = true
  end
  play()
end
log:close()
