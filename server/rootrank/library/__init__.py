"""The failure library: one YAML entry per failure under `rules/` (docs/entry-format.md).

records.py holds the records (Entry, LogPattern, Library, ...), load.py finds and loads the files
(safely, cached), validate.py checks one parsed entry. Callers import from here.
"""

from rootrank.library.load import LibraryCache, load_entry, load_library, read_yaml_safely, rules_dir
from rootrank.library.records import Entry, Example, FixVariant, Library, LoadProblem, LogPattern

__all__ = ["Entry", "Example", "FixVariant", "Library", "LibraryCache", "LoadProblem", "LogPattern", "load_entry",
           "load_library", "read_yaml_safely", "rules_dir"]
