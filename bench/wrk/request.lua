-- One request shape for every call, from the environment: WRK_METHOD, WRK_BODY, WRK_AUTH (a bearer key),
-- and WRK_UNIQUE (a prefix: "%d" in the body becomes <prefix>-<counter>, for bodies that must differ, e.g. names).
local method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
local auth = os.getenv("WRK_AUTH")
local unique = os.getenv("WRK_UNIQUE")
local counter = 0

wrk.method = method
wrk.headers["content-type"] = "application/json"
if auth then wrk.headers["authorization"] = "Bearer " .. auth end

request = function()
  if unique and body then
    counter = counter + 1
    return wrk.format(method, nil, nil, (body:gsub("%%d", unique .. "-" .. counter)))
  end
  return wrk.format(method, nil, nil, body)
end
