-- wrk script for scripts/bench.sh: one JSON-RPC workload per run.
--
--   wrk -t1 -cC -dDs --latency -s rpc.lua URL -- MODE HEAD
--
-- MODE: by_number | range20 | range100 | head_height | status | commitments |
--       batch10 | last_proof | echo.  HEAD: the ledger's head height (random
-- heights are drawn from 1..HEAD; commitment slots from the devnet schedule).
-- done() prints one line `BENCH {json}` with requests, duration, latency
-- percentiles and errors, which bench.sh parses.

local mode, head = "by_number", 1000

local function call(method, params, id)
  return string.format('{"jsonrpc":"2.0","id":%d,"method":"%s","params":[%s]}', id or 1, method, params)
end

local function height() return math.random(1, head) end

-- The devnet's commitment i lands on DA slot 1008 + 8 i (src/devnet/schedule.rs).
local function commitment_slot()
  local n = math.max(1, math.floor(head / 16) - 1)
  return 1008 + 8 * math.random(0, n - 1)
end

local bodies = {
  by_number = function() return call("ledger_getSoftConfirmationByNumber", height()) end,
  range20 = function()
    local s = math.random(1, math.max(1, head - 19)); return call("ledger_getSoftConfirmationRange", s .. "," .. (s + 19))
  end,
  range100 = function()
    local s = math.random(1, math.max(1, head - 99)); return call("ledger_getSoftConfirmationRange", s .. "," .. (s + 99))
  end,
  head_height = function() return call("ledger_getHeadSoftConfirmationHeight", "") end,
  status = function() return call("ledger_getSoftConfirmationStatus", height()) end,
  commitments = function() return call("ledger_getSequencerCommitmentsOnSlotByNumber", commitment_slot()) end,
  batch10 = function()
    return "[" .. table.concat({
      call("ledger_getSoftConfirmationByNumber", height(), 1),
      call("ledger_getSoftConfirmationByNumber", height(), 2),
      call("ledger_getSoftConfirmationByNumber", height(), 3),
      call("ledger_getSoftConfirmationByNumber", height(), 4),
      call("ledger_getSoftConfirmationStatus", height(), 5),
      call("ledger_getSoftConfirmationStatus", height(), 6),
      call("ledger_getHeadSoftConfirmationHeight", "", 7),
      call("ledger_getSequencerCommitmentsOnSlotByNumber", commitment_slot(), 8),
      call("svc_syncStatus", "", 9),
      call("ledger_getLastScannedL1Height", "", 10),
    }, ",") .. "]"
  end,
  last_proof = function() return call("ledger_getLastVerifiedBatchProof", "") end,
  echo = function() return call("ledger_getSoftConfirmationByNumber", height()) end,
}

function init(args)
  mode = args[1] or mode
  head = tonumber(args[2] or head)
  if not bodies[mode] then error("unknown mode " .. tostring(mode)) end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  return wrk.format(nil, nil, nil, bodies[mode]())
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"err_connect":%d,"err_read":%d,"err_write":%d,"err_status":%d,"err_timeout":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(99), latency.max,
    e.connect, e.read, e.write, e.status, e.timeout))
end
