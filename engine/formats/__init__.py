"""SillyTavern interchange formats and the native archive: import and export.

- :mod:`engine.formats.cards` character cards (V1/V2/V3, JSON and PNG)
- :mod:`engine.formats.preset` Chat Completion presets
  (:func:`parse_preset`, :func:`preset_to_json`); :mod:`engine.formats.preset_kinds` names the
  other SillyTavern files people import as presets (instruct templates, sampler presets)
- :mod:`engine.formats.worldbook` world books, standalone and card-embedded
  (:func:`parse_worldbook`, :func:`worldbook_to_json`, :func:`character_book_to_worldbook`)
- :mod:`engine.formats.regex_scripts` regex scripts
- :mod:`engine.formats.st_chat` SillyTavern JSONL chats; :mod:`engine.formats.st_kept` what an
  imported chat keeps beyond the timeline, so its export gives it back
- :mod:`engine.formats.archive` the native, lossless archive of a whole session
  (:func:`parse_archive`, :func:`archive_to_json`); :mod:`engine.formats.archive_st` turns a
  SillyTavern chat into one

Every importer raises :class:`engine.errors.FormatError` (file, field, problem) on bad input.
"""
