-- One request shape for every call, from the environment: WRK_METHOD, WRK_BODY, WRK_AUTH (a bearer key),
-- WRK_UNIQUE (a prefix: "%d" in the body becomes <prefix>-<counter>, for bodies that must differ, e.g. names),
-- and WRK_PATHS_FILE (a file of paths, one a line, requested in turn instead of the URL's path).
local method = os.getenv("WRK_METHOD") or "GET"
local body = os.getenv("WRK_BODY")
local auth = os.getenv("WRK_AUTH")
local unique = os.getenv("WRK_UNIQUE")
local counter = 0
local paths = {}
local pathsFile = os.getenv("WRK_PATHS_FILE")
if pathsFile then
  for line in io.lines(pathsFile) do paths[#paths + 1] = line end
end

wrk.method = method
wrk.headers["content-type"] = "application/json"
if auth then wrk.headers["authorization"] = "Bearer " .. auth end

request = function()
  if #paths > 0 then
    counter = counter + 1
    return wrk.format(method, paths[(counter - 1) % #paths + 1], nil, body)
  end
  if unique and body then
    counter = counter + 1
    return wrk.format(method, nil, nil, (body:gsub("%%d", unique .. "-" .. counter)))
  end
  return wrk.format(method, nil, nil, body)
end
