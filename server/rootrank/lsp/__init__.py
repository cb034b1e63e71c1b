"""The language server (`rootrank lsp`): the only package that imports pygls and lsprotocol.

A thin adapter over the engine. Feature modules: diagnostics (code and configs), logs (training logs),
hover, code_actions, commands; the core they are handed is core.py, and server.py assembles the two;
settings.py, state.py, convert.py, noqa.py and engine.py support them. What a checkpoint call does is
engine knowledge (rootrank.check.explain_call); the hover only renders it.
"""
