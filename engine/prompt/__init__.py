"""Prompt assembly: world info, regex scripts, token budget and the Prompt IR.

Entry points:

- :func:`engine.prompt.assemble.assemble` builds a :class:`engine.prompt.ir.PromptIR` from an
  :class:`engine.prompt.inputs.AssemblyInput` (modes ``compat_strict``, ``compat_plus``,
  ``native``), reading the chat lazily through a ``HistorySource``;
- :func:`engine.prompt.worldinfo.scan_world_info` runs world info activation on its own;
- :mod:`engine.prompt.regex_run` runs regex scripts; :mod:`engine.prompt.jsregex` translates
  JavaScript regular expressions.

Nothing is imported here, so importing one module does not load the others.
"""
