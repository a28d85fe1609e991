-- wrk's script for load on holo-tune serve over streamable HTTP: each request is one stateless
-- JSON-RPC POST of search_tools(query) to /mcp (no initialize, no session), and each answer is
-- checked: a 200 whose body holds the search's result ("isError":false) counts as good, anything
-- else as bad. At the end one line, `holo-tune-load {...}`, gives the counts as JSON.
--
--   wrk -t 2 -c 10 -d 20s -s deploy/search.lua http://127.0.0.1:8080/mcp
--
-- HOLO_TUNE_QUERIES=FILE takes the queries from FILE (one a line, used in turn); without it, a
-- few fixed ones.

local queries = {}
local file = os.getenv("HOLO_TUNE_QUERIES")
if file then
   for line in io.lines(file) do
      if line ~= "" then queries[#queries + 1] = line end
   end
end
if #queries == 0 then
   queries = { "remember a fact about a person", "search the web for news", "read a file" }
end

local function json_string(text)
   local escaped = text:gsub('[%c"\\]', function(c)
      if c == '"' then return '\\"' end
      if c == "\\" then return "\\\\" end
      return string.format("\\u%04x", c:byte())
   end)
   return '"' .. escaped .. '"'
end

local threads = {}
local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("offset", counter)
   threads[#threads + 1] = thread
end

function init(args)
   sent, good, bad, first_bad = 0, 0, 0, ""
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["Accept"] = "application/json, text/event-stream"
end

function request()
   sent = sent + 1
   local query = queries[(sent * 7 + offset) % #queries + 1]
   local body = '{"jsonrpc":"2.0","id":' .. sent .. ',"method":"tools/call","params":'
      .. '{"name":"search_tools","arguments":{"query":' .. json_string(query) .. '}}}'
   return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
   if status == 200 and body:find('"isError":false', 1, true) then
      good = good + 1
   else
      bad = bad + 1
      if first_bad == "" then first_bad = status .. " " .. body:sub(1, 200) end
   end
end

function done(summary, latency, requests)
   local good_total, bad_total, first = 0, 0, ""
   for _, thread in ipairs(threads) do
      good_total = good_total + thread:get("good")
      bad_total = bad_total + thread:get("bad")
      if first == "" then first = thread:get("first_bad") end
   end
   local errors = summary.errors
   io.write(string.format(
      'holo-tune-load {"requests":%d,"good":%d,"bad":%d,"seconds":%.3f,'
         .. '"socket_errors":%d,"timeouts":%d,"latency_p50_ms":%.3f,"latency_p99_ms":%.3f,'
         .. '"first_bad":%s}\n',
      summary.requests, good_total, bad_total, summary.duration / 1e6,
      errors.connect + errors.read + errors.write, errors.timeout,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000, json_string(first)))
end
