-- wrk script for scripts/bench.sh: are all connections served?
--
--   wrk -tC -cC -dDs -s fairness.lua URL -- HEAD
--
-- With as many threads as connections, each wrk thread owns one connection,
-- so a thread's response count is that connection's. done() prints
-- `FAIR {"conns":C,"served":S,"min":m,"max":M}`: S = connections that got at
-- least one answer (a connection starved by tiny_http's pool gets none).

local threads = {}
local head = 1000
responses = 0  -- global: read by done() through thread:get

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  head = tonumber(args[1] or head)
  math.randomseed(os.time() + math.floor(os.clock() * 1e6) + #tostring({}))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  return wrk.format(nil, nil, nil, string.format(
    '{"jsonrpc":"2.0","id":1,"method":"ledger_getSoftConfirmationByNumber","params":[%d]}',
    math.random(1, head)))
end

function response(status, headers, body)
  responses = responses + 1
end

function done(summary, latency, requests)
  local served, min, max = 0, math.huge, 0
  for _, t in ipairs(threads) do
    local n = t:get("responses") or 0
    if n > 0 then served = served + 1 end
    if n < min then min = n end
    if n > max then max = n end
  end
  io.write(string.format('FAIR {"conns":%d,"served":%d,"min":%d,"max":%d,"requests":%d}\n',
    #threads, served, min, max, summary.requests))
end
