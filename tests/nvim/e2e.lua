-- Headless Neovim end-to-end test of `rootrank lsp` (works on Debian's nvim 0.7 and on 0.8+).
--
--   RR_PY=/path/to/python RR_LOG=/path/to/log.txt RR_RANK=2 \
--     nvim --headless --clean -c "luafile tests/nvim/e2e.lua" train.py
--
-- train.py must call `checkpoint(block, x)` without use_reentrant. Checks: the diagnostic, the hover,
-- the preferred quick fix applied to the buffer, the diagnostic gone after the fix, and the
-- rootrank.diagnose command naming the initiating rank of RR_LOG, and (RR_LOG_DOC) the initiating-failure
-- diagnostic on that log opened as a document. Prints "nvim-e2e: N passed, M failed"
-- and exits non-zero when anything failed.
local RULE = "checkpoint.use-reentrant-explicit"
local uv = vim.uv or vim.loop
local t0 = uv.hrtime()
local passed, failed = 0, 0

local function log(msg) io.stdout:write(msg .. "\n") end
local function ms() return string.format("%.0f ms", (uv.hrtime() - t0) / 1e6) end
local function check(name, ok, detail)
  if ok then
    passed = passed + 1
    log("ok   " .. name .. " (" .. ms() .. ")" .. (detail and (": " .. detail) or ""))
  else
    failed = failed + 1
    log("FAIL " .. name .. (detail and (": " .. detail) or ""))
  end
  return ok
end
local function finish(client)
  if client then
    if vim.fn.has("nvim-0.11") == 1 then client:stop() else client.stop() end
  end
  log(string.format("nvim-e2e: %d passed, %d failed", passed, failed))
  vim.cmd(failed == 0 and "qall!" or "cquit 1")
end

local buf = vim.api.nvim_get_current_buf()
local cfg = {
  name = "rootrank",
  cmd = { os.getenv("RR_PY") or "python3", "-m", "rootrank.lsp" },
  root_dir = vim.fn.getcwd(),
}
local id
if vim.lsp.start then
  id = vim.lsp.start(cfg)
else
  id = vim.lsp.start_client(cfg)
  vim.lsp.buf_attach_client(buf, id)
end
local client = vim.lsp.get_client_by_id(id)
local function req(method, params, timeout)
  if vim.fn.has("nvim-0.11") == 1 then return client:request_sync(method, params, timeout or 10000, buf) end
  return client.request_sync(method, params, timeout or 10000, buf)
end
local function ours()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    if code == RULE then table.insert(out, d) end
  end
  return out
end

-- 1. the diagnostic
vim.wait(20000, function() return #ours() > 0 end, 50)
local d = ours()[1]
if not check("diagnostic " .. RULE, d ~= nil, d and string.format("line %d col %d: %s", d.lnum, d.col, d.message)) then
  return finish(client)
end
local uri = vim.uri_from_bufnr(buf)

-- 2. the hover on the call
local hr = req("textDocument/hover",
  { textDocument = { uri = uri }, position = { line = d.lnum, character = d.col + 2 } })
local hover = hr and hr.result and hr.result.contents and hr.result.contents.value or ""
check("hover explains use_reentrant", hover:find("use_reentrant", 1, true) ~= nil and hover:find("Reentrant", 1, true) ~= nil,
  (hover:gsub("\n.*", "")))

-- 3. the preferred quick fix, applied to the buffer
local lspd = nil
if vim.lsp.diagnostic.get_line_diagnostics then
  for _, x in ipairs(vim.lsp.diagnostic.get_line_diagnostics(buf, d.lnum)) do
    if x.code == RULE then lspd = x end
  end
end
if lspd == nil then
  local lsp = (d.user_data and d.user_data.lsp) or {}
  lspd = { range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } },
           message = d.message, severity = d.severity, source = d.source, code = RULE, data = lsp.data }
end
local ar = req("textDocument/codeAction",
  { textDocument = { uri = uri }, range = lspd.range, context = { diagnostics = { lspd }, only = { "quickfix" } } })
local preferred = nil
for _, action in ipairs((ar and ar.result) or {}) do
  if action.isPreferred then preferred = action end
end
if check("preferred quick fix offered", preferred ~= nil, preferred and preferred.title) then
  vim.lsp.util.apply_workspace_edit(preferred.edit, client.offset_encoding)
  local line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
  check("quick fix applied", line:find("use_reentrant=", 1, true) ~= nil, line)
  -- 4. the server re-checks the changed buffer and the diagnostic goes away
  check("diagnostic cleared after the fix", vim.wait(10000, function() return #ours() == 0 end, 50))
end

-- 5. rootrank.diagnose on a log from a real multi-rank run
local path = os.getenv("RR_LOG")
if path then
  local text = table.concat(vim.fn.readfile(path), "\n")
  local cr = req("workspace/executeCommand", { command = "rootrank.diagnose", arguments = { text } }, 30000)
  local root = cr and cr.result and cr.result.root_cause
  local rank = root and root.rank
  check("rootrank.diagnose names the initiating rank", root ~= nil and tostring(rank) == os.getenv("RR_RANK"),
    root and string.format("rank %s, %s", tostring(rank), root.title) or vim.inspect(cr))
end

-- 6. the same log opened as a document: an Error on the initiating failure's line
local doc = os.getenv("RR_LOG_DOC")
if doc then
  vim.cmd("edit " .. vim.fn.fnameescape(doc))
  local logbuf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(logbuf, id)
  local initiating = nil
  vim.wait(30000, function()
    for _, x in ipairs(vim.diagnostic.get(logbuf)) do
      if x.severity == vim.diagnostic.severity.ERROR and x.message:find("initiating failure", 1, true) then
        initiating = x
        return true
      end
    end
    return false
  end, 50)
  check("log document: initiating failure diagnostic", initiating ~= nil and
    initiating.message:find("rank " .. (os.getenv("RR_RANK") or "?") .. ",", 1, true) ~= nil,
    initiating and string.format("line %d: %s", initiating.lnum + 1, initiating.message))
end

finish(client)
