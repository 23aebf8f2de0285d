-- bench/parent-chain --load wrk: every request in absolute form, through
-- the proxy under test to the origin (loadgen serve) at 127.0.0.1:49477.
wrk.method = "GET"
wrk.path = "http://127.0.0.1:49477/bytes/1024"
wrk.headers["Host"] = "127.0.0.1:49477"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"wrk_done":{"requests":%d,"bytes":%d,'
    .. '"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,'
    .. '"status":%d,"timeout":%d},"latency_us":{"p50":%.1f,"p90":%.1f,'
    .. '"p99":%.1f,"p999":%.1f}}}\n',
    summary.requests, summary.bytes, summary.duration, e.connect, e.read,
    e.write, e.status, e.timeout, latency:percentile(50),
    latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9)))
end
