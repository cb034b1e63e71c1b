"""The language server (`rootrank lsp`): the only package that imports pygls and lsprotocol.

Feature modules: diagnostics (code and configs), logs (training logs), hover, code_actions, commands;
the core is server.py; settings.py, state.py, convert.py, noqa.py, calls.py, checkpointing.py,
environment.py and engine.py support them.
"""
