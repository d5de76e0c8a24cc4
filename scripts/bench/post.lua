-- wrk script for scripts/bench_load.sh: POSTs one Responses API body to /v1/responses and
-- prints one machine-readable result line.
--
-- Environment: BENCH_BODY (path of the body file), BENCH_EXPECT ("json" or "sse": the
-- content type every answer must have, so a streaming run that silently got JSON back, or an
-- error page, counts as an error).
--
-- wrk only counts statuses >= 400 and socket errors by itself; the response() callback
-- below also counts any non-2xx status and any wrong content type. Each wrk thread has its
-- own Lua state, so the counters are collected from the threads in done().

local path = os.getenv("BENCH_BODY") or error("BENCH_BODY is not set")
local expect = os.getenv("BENCH_EXPECT") or error("BENCH_EXPECT is not set")
local f = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.path = "/v1/responses"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
-- BENCH_BYPASS=1: ctxgate leaves the body to no stage (the mock and nginx ignore the header), so the upstream
-- receives the same bytes through every target and only the hop itself is measured.
if os.getenv("BENCH_BYPASS") == "1" then
   wrk.headers["X-Ctxgate-Bypass"] = "1"
end

local want = expect == "sse" and "text/event-stream" or "application/json"

local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   non2xx = 0
   badtype = 0
   firstbad = ""
end

function response(status, headers, body)
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
      if firstbad == "" then firstbad = "status " .. status .. ": " .. string.sub(body or "", 1, 200) end
      return
   end
   local ct = ""
   for k, v in pairs(headers) do
      if string.lower(k) == "content-type" then ct = string.lower(v) end
   end
   if string.find(ct, want, 1, true) ~= 1 then
      badtype = badtype + 1
      if firstbad == "" then firstbad = "content-type '" .. ct .. "', expected " .. want end
   end
end

function done(summary, latency, requests)
   local non2xx_total, badtype_total, first = 0, 0, ""
   for _, t in ipairs(threads) do
      non2xx_total = non2xx_total + t:get("non2xx")
      badtype_total = badtype_total + t:get("badtype")
      if first == "" then first = t:get("firstbad") end
   end
   local e = summary.errors
   local secs = summary.duration / 1e6
   -- Latencies are in microseconds.
   io.write(string.format(
      "BENCH_RESULT requests=%d seconds=%.3f rps=%.1f p50_us=%d p99_us=%d mean_us=%.1f max_us=%d " ..
      "err_connect=%d err_read=%d err_write=%d err_timeout=%d err_status=%d non2xx=%d badtype=%d\n",
      summary.requests, secs, summary.requests / secs,
      latency:percentile(50), latency:percentile(99), latency.mean, latency.max,
      e.connect, e.read, e.write, e.timeout, e.status, non2xx_total, badtype_total))
   if first ~= "" then
      io.write("BENCH_FIRST_ERROR " .. string.gsub(first, "\n", " ") .. "\n")
   end
end
